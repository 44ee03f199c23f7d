"""The support workflow: triage_agent hands a case to refund_agent or order_agent.

refund_agent looks orders up freely and submits refunds that the `support` group approves;
order_agent submits replacements that the customer confirms. The workflow ends when an agent's
last message ends with "case complete.".
"""

from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Literal

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from pydantic import Field

from agents.runtime.sentences import Record, Sentence
from agents.runtime.tools import NOT_DONE, Owned, ToolError, acting_for, tool

from . import money
from .agent import Agent
from .models import Order, OrderAction
from .workflow import Handoff, Workflow

# titles and descriptions are msgids: the argument editor says them in the reviewer's language
OrderNumber = Annotated[str, Field(pattern=r"^[0-9]{4,12}$", title=gettext_noop("Order number"),
                                   description=gettext_noop("The order number, digits only"))]
CENTS = Decimal("0.01")

# what the tools answer, one sentence per shape: the model reads the English, the person their language
# (agents/runtime/sentences.py)
NO_ORDER = Sentence(gettext_noop("there is no order %(order)s on this customer's account"))
ORDER_RECORD = Record(gettext_noop("Order %(order_id)s: %(item_name)s, %(amount)s, %(status)s."),
                      keys=("order_id", "item_name", "amount", "status"), money=("amount",),
                      choices={"status": dict(Order.Status.choices)})
ALREADY_REFUNDED = Sentence(gettext_noop("Order %(order)s was already refunded."))
TOO_MUCH = Sentence(gettext_noop("The refund (%(refund)s) is more than the amount of order %(order)s (%(amount)s)."),
                    money=("refund", "amount"))
REFUND_REPEATED = Sentence(gettext_noop("this refund was already submitted"))
REFUNDED = Sentence(gettext_noop("Refund of %(amount)s %(currency)s recorded for order %(order)s (%(item)s)."),
                    money=("amount",))
REPLACEMENT_REPEATED = Sentence(gettext_noop("this replacement was already submitted"))
SHIPPING = (gettext_noop("standard"), gettext_noop("express"))  # the words of shipping_preference's values
REPLACED = Sentence(gettext_noop("Replacement for order %(order)s (%(item)s) will ship by %(shipping)s delivery."),
                    words=("shipping",))


def _order(ctx, number, lock=False):
    qs = Order.objects.select_for_update() if lock else Order.objects
    order = qs.filter(number=number, owner=ctx.user).first()
    if order is None:
        raise ToolError(NO_ORDER(order=number))
    return order


def _order_objects(a):
    """objects=: the order a call acts on must be the customer's own."""
    row = Order.objects.filter(number=a["order_id"]).values_list(
        "owner_id", "owner__username", "item_name", "amount", "currency", "status").first()
    state = f"{row[2]}, {row[3]:,.2f} {row[4]}, {dict(Order.Status.choices).get(row[5], row[5]).lower()}" if row else ""
    return [Owned.lookup("order_id", gettext_noop("order"), a["order_id"], row and row[:2], state=state)]


def _client_context(ctx):
    """The AG-UI forwardedProps, kept with the action for the support team (never told to the model)."""
    return dict(ctx.forwarded_props or {})


# a read: safe to run again when a worker died while it ran (agents/runtime/execution.py retries it)
@tool(summary=gettext_noop("Look up one of the customer's orders"),
      approval_mode="never", risk="low", reversible=True, idempotent=True,
      describe=lambda a: _("Look up order %(order_id)s") % a, objects=_order_objects, in_database=True)
def lookup_order_details(ctx, order_id: OrderNumber):
    """Return the details of one of the customer's orders."""
    order = _order(ctx, order_id)
    return ORDER_RECORD(order_id=order.number, item_name=order.item_name, amount=f"{order.amount} {order.currency}",
                        status=order.status)


def _cents(amount):
    return Decimal(str(amount)).quantize(CENTS, rounding=ROUND_HALF_UP)


def _action_outcome(kind):
    """outcome= of a tool whose OrderAction row (unique per tool call) is written in the transaction
    of its effect: whether a call whose worker died took effect, and what it did, is read there, so
    recovery reports it (or runs it again) instead of calling it unknown (runtime/execution.py)."""
    def outcome(tool_call_id, _arguments):
        action = OrderAction.objects.filter(tool_call_ref=tool_call_id, kind=kind).select_related("order").first()
        if action is None:
            return NOT_DONE
        order = action.order
        if kind == OrderAction.Kind.REFUND:
            return REFUNDED(amount=action.amount, currency=order.currency, order=order.number, item=order.item_name)
        return REPLACED(order=order.number, item=order.item_name, shipping=action.details.get("shipping_preference"))

    return outcome


def _refunded(order):
    """Whether the order was refunded, by its history: its status is what the last action made it (a
    replacement the customer confirmed after a refund said "replacement sent", and a second refund of
    the same order went through)."""
    return order.status == Order.Status.REFUNDED or order.actions.filter(kind=OrderAction.Kind.REFUND).exists()


def _own_order(a):
    """For a refuses= check: the call's order when it is the customer's own (another's is not read), else None."""
    user = acting_for()
    return Order.objects.filter(number=a["order_id"], owner_id=user.pk).first() if user is not None else None


def _replacement_refuses(a):
    """refuses=: an order refunded already gets no replacement (the customer has their money back)."""
    order = _own_order(a)
    return _(ALREADY_REFUNDED.msgid) % {"order": order.number} if order is not None and _refunded(order) else None


def _refund_refused(order, value):
    """(msgid, values) of what submit_refund refuses of this order (the customer's own) whatever happens
    before it runs, or None: asked by the tool as it runs and by its up-front check (refuses=)."""
    if _refunded(order):
        return ALREADY_REFUNDED.msgid, {"order": order.number}
    if value > order.amount:
        return TOO_MUCH.msgid, {
            "refund": value, "order": order.number, "amount": order.amount}
    return None


def _refund_refuses(a):
    """refuses=: the tool's own refusal, up front; an order that is not the customer's is not read."""
    order = _own_order(a)
    said = _refund_refused(order, _cents(a["amount"])) if order is not None else None
    return _(said[0]) % said[1] if said else None


@tool(
    summary=gettext_noop("Refund one of the customer's orders"),
    approval_mode="always",
    approver="group:support",
    risk="medium",
    reversible=False,
    describe=lambda a: _("Refund %(amount)s on order %(order_id)s: %(reason)s") % {
        "amount": money.shown(a["amount"]), "order_id": a["order_id"],
        "reason": a["refund_description"]},
    impact=lambda a: _("Pays %(amount)s back to the customer of order %(order_id)s; a refund cannot be taken back "
                       "from here") % {"amount": money.shown(a["amount"]), "order_id": a["order_id"]},
    objects=_order_objects,
    in_database=True,
    refuses=_refund_refuses,
    outcome=_action_outcome(OrderAction.Kind.REFUND),
)
def submit_refund(
    ctx,
    order_id: OrderNumber,
    amount: money.amount(le=100_000, description=gettext_noop("Amount to refund, in the order's currency")),
    refund_description: Annotated[str, Field(min_length=1, max_length=500, title=gettext_noop("Reason"),
                                             description=gettext_noop("Why the refund is due"))],
):
    """Submit a refund for one of the customer's orders (reviewed by the support team first)."""
    value = _cents(amount)
    try:
        with transaction.atomic():
            order = _order(ctx, order_id, lock=True)
            if said := _refund_refused(order, value):  # the model reads the English
                raise ToolError(said[0] % said[1])
            OrderAction.objects.create(
                order=order, kind=OrderAction.Kind.REFUND, amount=value,
                details={"description": refund_description}, client_context=_client_context(ctx),
                tool_call_ref=ctx.tool_call_id,
            )
            order.status = Order.Status.REFUNDED
            order.save(update_fields=["status"])
    except IntegrityError as exc:  # the unique tool_call_ref: this call already refunded
        raise ToolError(REFUND_REPEATED()) from exc
    return REFUNDED(amount=value, currency=order.currency, order=order_id, item=order.item_name)


@tool(
    summary=gettext_noop("Send the customer a replacement for one of their orders"),
    approval_mode="always",
    approver="requester",
    risk="low",
    reversible=False,
    describe=lambda a: _("Send a replacement for order %(order_id)s (%(shipping_preference)s shipping)") % a,
    impact=lambda a: _("Ships a new item for order %(order_id)s at no cost to the customer") % a,
    objects=_order_objects,
    in_database=True,
    refuses=_replacement_refuses,
    outcome=_action_outcome(OrderAction.Kind.REPLACEMENT),
)
def submit_replacement(
    ctx,
    order_id: OrderNumber,
    shipping_preference: Annotated[Literal["standard", "express"], Field(title=gettext_noop("Shipping"),
                                                                         description=gettext_noop("How to ship it"))],
    replacement_note: Annotated[str, Field(min_length=1, max_length=500, title=gettext_noop("Note"),
                                           description=gettext_noop("What is wrong"))],
):
    """Send the customer a replacement for one of their orders (the customer confirms first)."""
    try:
        with transaction.atomic():
            order = _order(ctx, order_id, lock=True)
            if _refunded(order):  # the model reads the English
                raise ToolError(ALREADY_REFUNDED(order=order.number))
            OrderAction.objects.create(
                order=order, kind=OrderAction.Kind.REPLACEMENT,
                details={"shipping_preference": shipping_preference, "note": replacement_note},
                client_context=_client_context(ctx), tool_call_ref=ctx.tool_call_id,
            )
            order.status = Order.Status.REPLACEMENT_SENT
            order.save(update_fields=["status"])
    except IntegrityError as exc:
        raise ToolError(REPLACEMENT_REPEATED()) from exc
    return REPLACED(order=order_id, item=order.item_name, shipping=shipping_preference)


_ENDING = 'When the case is resolved (or cannot be), tell the customer and end your message with "Case complete."'

TRIAGE = Agent(
    name="triage_agent",
    title=gettext_noop("Triage"),
    description=gettext_noop("Works out what the customer needs and routes the case."),
    system_prompt=(
        "You are triage_agent, the first contact of a customer support team. Work out what the customer "
        "needs. Refunds go to refund_agent (handoff_to_refund_agent); replacements of damaged or wrong "
        "items go to order_agent (handoff_to_order_agent). Do not process anything yourself. If the "
        "request is unclear, ask one short question. " + _ENDING
    ),
)
REFUND = Agent(
    name="refund_agent",
    title=gettext_noop("Refunds"),
    description=gettext_noop("Looks orders up and submits refunds for the support team's approval."),
    system_prompt=(
        "You are refund_agent. You handle refunds. If you do not know the order number, ask the customer "
        "with request_info. Look the order up with lookup_order_details before submitting anything, then "
        "submit the refund with submit_refund (a support reviewer approves it first). If the customer also "
        "wants a replacement, hand off to order_agent. Never claim a refund happened unless the tool result "
        "says so. " + _ENDING
    ),
    tools=[lookup_order_details, submit_refund],
)
ORDER = Agent(
    name="order_agent",
    title=gettext_noop("Orders"),
    description=gettext_noop("Looks orders up and sends replacements the customer confirms."),
    system_prompt=(
        "You are order_agent. You handle replacements. If you do not know the order number or the shipping "
        "preference, ask the customer with request_info. Look the order up with lookup_order_details, then "
        "submit the replacement with submit_replacement (the customer confirms it). Hand off to "
        "triage_agent if the customer needs something else. " + _ENDING
    ),
    tools=[lookup_order_details, submit_replacement],
)

WORKFLOW = Workflow(
    name="support",
    title=gettext_noop("Customer support (workflow)"),
    description=gettext_noop("Three agents hand a case to each other: triage, refunds (the support team approves) "
    "and replacements (you confirm). They ask you when they need information."),
    system_prompt="",
    participants=[TRIAGE, REFUND, ORDER],
    handoffs=[
        Handoff("triage_agent", "refund_agent", "Route refund requests."),
        Handoff("triage_agent", "order_agent", "Route replacement requests."),
        Handoff("refund_agent", "order_agent", "Route to orders when a replacement is also needed."),
        Handoff("order_agent", "triage_agent", "Route back when the customer needs something else."),
    ],
    start="triage_agent",
)
AGENT = WORKFLOW
