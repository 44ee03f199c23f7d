"""The banking agent: transfer_money and cancel_subscription need approval.

Tools act for the requester: money leaves only their own accounts, balances are theirs to read,
subscriptions theirs to cancel (`objects=`, agents/runtime/tools.py); a transfer may go to anyone's account.
"""

from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Literal

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_noop
from pydantic import Field

from agents.runtime.sentences import Sentence
from agents.runtime.tools import NOT_DONE, NOT_YOURS, Owned, ToolError, acting_for, tool
from agui_project.queries import Prepared, one

from . import money
from .agent import Agent
from .models import Account, Subscription, Transfer

# titles and descriptions are msgids: the argument editor says them in the reviewer's language
AccountNumber = Annotated[str, Field(pattern=r"^[0-9]{6,20}$", title=gettext_noop("Account"),
                                     description=gettext_noop("Account number, digits only"))]
CENTS = Decimal("0.01")


# what the tools answer, one sentence per shape: the model reads the English, the person their language
# (agents/runtime/sentences.py)
TRANSFERRED = Sentence(gettext_noop("Transferred %(amount)s %(currency)s from %(src)s to %(dst)s. New balance of "
                                    "%(src)s: %(balance)s %(currency)s."), money=("amount", "balance"))
TRANSFER_READ_BACK = Sentence(gettext_noop("Transferred %(amount)s %(currency)s from %(src)s to %(dst)s (read back "
                                           "from the bank's records: the transfer's own answer was lost)."),
                              money=("amount",))
UNKNOWN_ACCOUNT = Sentence(gettext_noop("unknown account %(accounts)s"))
NOT_TAKEN = Sentence(gettext_noop("account %(account)s does not take %(currency)s"))
INSUFFICIENT = Sentence(gettext_noop("insufficient funds: %(account)s holds %(balance)s %(currency)s"),
                        money=("balance",))
SAME_ACCOUNT = Sentence(gettext_noop("A transfer needs two different accounts: %(account)s is on both sides."))
OTHER_CURRENCY = Sentence(gettext_noop("Account %(account)s is in %(held)s, so a transfer from or to it cannot be in "
                                       "%(currency)s."))
CANCELLED = Sentence(gettext_noop("Subscription %(sub)s (%(plan)s) is cancelled."))
ALREADY_CANCELLED = Sentence(gettext_noop("Subscription %(sub)s was already cancelled."))
NO_SUBSCRIPTION = Sentence(gettext_noop("no subscription %(sub)s belongs to you"))
HOLDS = Sentence(gettext_noop("Account %(account)s holds %(balance)s %(currency)s."), money=("balance",))


def _money(amount):
    return Decimal(str(amount)).quantize(CENTS, rounding=ROUND_HALF_UP)


# Who owns the objects a call names (read when the call is judged and again as it runs) and the rows
# it locks to act: on every call of these tools, so compiled once (agui_project/queries)
_ACCOUNTS = Prepared(Account, lambda first, second: Account.objects.filter(number__in=[first, second]).values_list(
    "number", "owner_id", "owner__username", "balance", "currency"), arity=2)
_LOCKED_ACCOUNTS = Prepared(Account, lambda first, second: Account.objects.select_for_update().filter(
    number__in=[first, second]), arity=2)
_SUBSCRIPTION = Prepared(Subscription, lambda ref: Subscription.objects.filter(ref=ref).values_list(
    "owner_id", "owner__username", "plan", "status"))
_OWN_SUBSCRIPTION = Prepared(Subscription, lambda ref, owner: Subscription.objects.select_for_update().filter(
    ref=ref, owner_id=owner), arity=2, types=(str, int))
_OWN_ACCOUNT = Prepared(Account, lambda number, owner: Account.objects.filter(number=number, owner_id=owner),
                        arity=2, types=(str, int))


def _accounts(**fields):
    """objects= for account arguments: {argument: must it be the requester's} (one or two of them)."""
    if not 1 <= len(fields) <= 2:
        raise ValueError("_accounts reads one or two account arguments")

    def objects(a):
        numbers = [a[f] for f in fields]
        rows = _ACCOUNTS.all(numbers[0], numbers[-1])
        owners = {number: (owner_id, name) for number, owner_id, name, _b, _c in rows}
        # the balance of the requester's own accounts only (what the call spends from); not a payee's
        balances = {number: gettext("balance %(amount)s %(currency)s") % {
            "amount": number_format(balance, 2, force_grouping=True), "currency": currency}
            for number, _o, _n, balance, currency in rows}
        return [Owned.lookup(f, gettext_noop("account"), a[f], owners.get(a[f]), mine=mine, state=balances.get(a[f], "") if mine else "")
                for f, mine in fields.items()]

    return objects


def _subscription(a):
    row = _SUBSCRIPTION.one(a["subscription_id"])
    state = gettext("%(plan)s plan, %(status)s") % {"plan": row[2], "status": row[3]} if row else ""
    return [Owned.lookup("subscription_id", gettext_noop("subscription"), a["subscription_id"], row and row[:2], state=state)]


def _transfer_outcome(tool_call_id, _arguments):
    """A transfer's row is written in the transaction that moves the money: whether a call whose
    worker died moved it, and what it moved, is read there (recovery asks; runtime/execution.py)."""
    made = one(Transfer.objects.filter(tool_call_ref=tool_call_id).select_related("from_account", "to_account"))
    if made is None:
        return NOT_DONE
    return TRANSFER_READ_BACK(amount=made.amount, currency=made.currency, src=made.from_account.number,
                              dst=made.to_account.number)


def _refused(from_account, to_account, currency, own):
    """(msgid, values) of what transfer_money refuses whatever happens before it runs, or None: asked by
    the tool as it runs and by its up-front check (refuses=), so the two cannot disagree. `own`: {number:
    currency} of the requester's accounts among the two; another's account is read by nobody here."""
    if from_account == to_account:
        return SAME_ACCOUNT.msgid, {"account": from_account}
    for number in (from_account, to_account):
        if number in own and own[number] != currency:
            return OTHER_CURRENCY.msgid, {"account": number, "held": own[number], "currency": currency}
    return None


def _transfer_refuses(a):
    """refuses=: the tool's own refusal, up front, of the requester's own accounts only."""
    user = acting_for()
    own = dict(Account.objects.filter(number__in=[a["from_account"], a["to_account"]], owner_id=user.pk)
               .values_list("number", "currency")) if user is not None else {}
    said = _refused(a["from_account"], a["to_account"], a["currency"], own)
    return gettext(said[0]) % said[1] if said else None


@tool(
    summary=gettext_noop("Transfer money from one account to another"),
    approval_mode="always",
    approver="group:finance",
    risk="high",
    reversible=False,
    # what reviewers and the requester read, in the requester's language (the run's worker speaks it)
    describe=lambda a: gettext("Transfer %(amount)s %(currency)s from %(src)s to %(dst)s") % {
        "amount": money.shown(a["amount"]), "currency": a["currency"], "src": a["from_account"], "dst": a["to_account"]},
    impact=lambda a: gettext("Moves %(amount)s %(currency)s out of account %(src)s; a completed transfer cannot be "
                             "undone from here") % {"amount": money.shown(a["amount"]), "currency": a["currency"],
                                                    "src": a["from_account"]},
    objects=_accounts(from_account=True, to_account=False),
    outcome=_transfer_outcome,
    in_database=True,
    refuses=_transfer_refuses,
)
def transfer_money(
    ctx,
    from_account: Annotated[AccountNumber, Field(title=gettext_noop("From account"))],
    to_account: Annotated[AccountNumber, Field(title=gettext_noop("To account"))],
    amount: money.amount(le=1_000_000, description=gettext_noop("Amount to move")),
    currency: Annotated[Literal["USD", "EUR", "GBP"], Field(title=gettext_noop("Currency"),
                                                            description=gettext_noop("ISO currency code"))] = "USD",
):
    """Transfer money from one account to another."""
    value = _money(amount)
    if said := _refused(from_account, to_account, currency, {}):  # the model reads the English
        raise ToolError(said[0] % said[1])
    try:
        with transaction.atomic():
            accounts = {a.number: a for a in _LOCKED_ACCOUNTS.all(from_account, to_account)}
            if from_account not in accounts or to_account not in accounts:
                missing = [n for n in (from_account, to_account) if n not in accounts]
                raise ToolError(UNKNOWN_ACCOUNT(accounts=", ".join(missing)))
            src, dst = accounts[from_account], accounts[to_account]
            if src.owner_id != ctx.user.pk:  # checked before policy too; this is the row we lock
                raise ToolError(NOT_YOURS(kind="account", ref=from_account))
            own = {a.number: a.currency for a in (src, dst) if a.owner_id == ctx.user.pk}
            if said := _refused(from_account, to_account, currency, own):
                raise ToolError(said[0] % said[1])
            if dst.currency != currency:  # another's account: what it holds is not said
                raise ToolError(NOT_TAKEN(account=to_account, currency=currency))
            if src.balance < value:
                raise ToolError(INSUFFICIENT(account=src.number, balance=src.balance, currency=src.currency))
            src.balance -= value
            dst.balance += value
            src.save(update_fields=["balance"])
            dst.save(update_fields=["balance"])
            Transfer.objects.create(
                from_account=src, to_account=dst, amount=value, currency=currency, tool_call_ref=ctx.tool_call_id
            )
    except IntegrityError as exc:  # the unique tool_call_ref: this call already moved the money
        made = _transfer_outcome(ctx.tool_call_id, None)
        if made == NOT_DONE:
            raise ToolError("this transfer could not be recorded") from exc
        return made  # what its record says it did: the call succeeded, once (it read "failed")
    return TRANSFERRED(amount=value, currency=currency, src=from_account, dst=to_account, balance=src.balance)


@tool(
    summary=gettext_noop("Cancel one of the user's subscriptions"),
    approval_mode="always",
    approver="requester",
    risk="medium",
    reversible=False,
    describe=lambda a: gettext("Cancel subscription %(sub)s (it stops at once and is not refunded)") % {
        "sub": a["subscription_id"]},
    impact=lambda a: gettext("Subscription %(sub)s ends immediately") % {"sub": a["subscription_id"]},
    objects=_subscription,
    in_database=True,
)
def cancel_subscription(ctx, subscription_id: Annotated[str, Field(min_length=1, max_length=64,
                                                                   title=gettext_noop("Subscription"))]):
    """Cancel one of the user's subscriptions."""
    with transaction.atomic():
        sub = _OWN_SUBSCRIPTION.one(subscription_id, ctx.user.pk)
        if sub is None:
            raise ToolError(NO_SUBSCRIPTION(sub=subscription_id))
        if sub.status == Subscription.Status.CANCELLED:
            return ALREADY_CANCELLED(sub=subscription_id)
        sub.status, sub.cancelled_at = Subscription.Status.CANCELLED, timezone.now()
        sub.save(update_fields=["status", "cancelled_at"])
    return CANCELLED(sub=subscription_id, plan=sub.plan)


@tool(summary=gettext_noop("Look up the balance of one of the user's accounts"),
      approval_mode="never", risk="low", reversible=True, describe=lambda a: gettext("Read the balance of %(account)s") % {"account": a["account"]},
      objects=_accounts(account=True), in_database=True)
def check_balance(ctx, account: AccountNumber):
    """Look up the balance of one of the user's accounts."""
    acct = _OWN_ACCOUNT.one(account, ctx.user.pk)
    if acct is None:
        raise ToolError(NOT_YOURS(kind="account", ref=account))
    return HOLDS(account=acct.number, balance=acct.balance, currency=acct.currency)


AGENT = Agent(
    name="banking",
    title=gettext_noop("Banking assistant"),
    description=gettext_noop("Checks balances, transfers money (finance approves) and cancels subscriptions (you approve)."),
    system_prompt=(
        "You are a careful banking assistant. Use the tools to act; never claim an action happened "
        "unless a tool result says so. Transfers are reviewed by the finance team; subscription "
        "cancellations are confirmed by the user. If a person rejects an action, do not try to reach "
        "the same goal another way unless they tell you to."
    ),
    tools=[transfer_money, cancel_subscription, check_balance],
)
