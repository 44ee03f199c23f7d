"""Plain-JSON views of records for AG-UI events and the REST API (one place, one shape)."""

from ag_ui.core import AssistantMessage, FunctionCall, SystemMessage, ToolCall, ToolMessage, UserMessage
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy

from approvals import reader_schema
from approvals import selectors as approval_selectors
from approvals import services as approval_services
from approvals.access import memberships
from approvals.models import ApprovalRequest, ApproverKind, said
from people import selectors as people

from .models import ToolCall as CallRow
from .registry import get_tool
from .runtime.sentences import person_words
from .runtime.tools import NOT_YOURS


def approver(request):
    if request.approver_kind == ApproverKind.GROUP and request.approver_group_id:
        return {"kind": "group", "group": request.approver_group.name}
    return {"kind": "requester"}


def approval(request, viewer=None):
    """The approval card's data (CUSTOM approval_request / approval_response / approvals)."""
    data = {
        "approvalId": request.pk,
        "toolCallId": request.tool_call_ref,
        "runId": request.run_ref,  # the chat's Stop withdraws a paused run's requests
        "toolCallName": request.tool_name,
        "arguments": request.arguments,
        # the headline in the reader's language (said in every language when asked, or when edited):
        # the stored description is in the language of the moment it was written
        "message": said(request, "description"),
        "status": request.status,
        "approver": approver(request),
        "canDecide": bool(viewer and request.is_pending and approval_services.can_decide(
            viewer, request, group_ids=memberships(viewer)[0])),
        "risk": request.risk,
        "reversible": request.reversible,
        "impact": said(request, "impact"),
        "steps": [{"toolCallId": request.tool_call_ref, "toolCallName": request.tool_name, "arguments": request.arguments}],
        # the answers this tool's policy offers (approve, edit, reject, respond): the card shows only those
        "allowedDecisions": [d for d in ("approve", "edit", "reject", "respond") if request.allows(d)],
    }
    if request.final_arguments is not None:
        data["finalArguments"] = request.final_arguments
        tool = get_tool(request.tool_name)
        if tool and request.final_arguments != request.arguments:  # the card's title says what ran
            # in the requester's words, like the request's own description (built in their run's worker)
            with translation.override(people.language_for(request.requester)):
                data["finalMessage"] = tool.description_for(request.final_arguments)
    if request.schema:  # how the card formats values (integers, money with its currency)
        data["argumentsSchema"] = request.schema
    labels = reader_schema.labels(request.tool_name)  # how it names them (our own tools', in the active language)
    if labels:
        data["argumentLabels"] = labels
    if request.expires_at:
        data["expiresAt"] = request.expires_at.isoformat()
    if request.created_at:  # "waiting for finance since 12:03"
        data["createdAt"] = request.created_at.isoformat()
    if request.person_feedback:  # a reviewer's words; the card says an expiry or a withdrawal itself
        data["feedback"] = request.person_feedback
    if request.decided_by_id:
        data["decidedBy"] = request.decided_by.username
    if request.matched_rule:  # why a person is asked: the policy rule, and the model's self-check
        data["matchedRule"] = request.matched_rule
    if request.self_check:
        data["selfCheck"] = request.self_check
    if request.required_approvals > 1:
        data["requiredApprovals"] = request.required_approvals
    short = approval_selectors.out_of_reach(approval=request)
    if short is not None:  # its groups cannot give the approvals it needs: the card says so, not "awaiting review"
        data["outOfReach"] = {"adminsTold": short["told"]}
    return data


def agui_message(msg):
    """A stored Message as an ag_ui.core message model."""
    if msg.role == "user":  # with images: the AG-UI content parts it came with
        return UserMessage(id=msg.id, content=msg.parts or msg.content)
    if msg.role == "system":
        return SystemMessage(id=msg.id, content=msg.content)
    if msg.role == "tool":
        return ToolMessage(id=msg.id, content=msg.content, tool_call_id=msg.tool_call_id, error=msg.error or None)
    calls = [
        ToolCall(id=c["id"], function=FunctionCall(name=c["function"]["name"], arguments=c["function"]["arguments"]))
        for c in msg.tool_calls or []
    ]
    return AssistantMessage(id=msg.id, content=msg.content or None, tool_calls=calls or None)


def _size(msg):
    """About what `msg` weighs in a MESSAGES_SNAPSHOT, as UTF-8 (its texts and a frame's keys)."""
    weight = 120 + len((msg.content or "").encode()) + len((msg.error or "").encode())
    for call in msg.tool_calls or ():
        function = call.get("function") or {}
        weight += 80 + len(str(function.get("arguments") or "").encode()) + len(str(function.get("name") or ""))
    if msg.parts:
        weight += len(str(msg.parts).encode())
    return weight


def snapshot_window(messages, budget=None):
    """The newest of a thread's stored `messages` that a MESSAGES_SNAPSHOT carries: the whole history
    while it weighs at most `budget` (AGUI_SNAPSHOT_MAX_BYTES), else its latest part, from a person's
    turn on. A client sends back what it was given with its next turn, and a thread whose history had
    grown past the request body's limit (AGUI_MAX_BODY_BYTES: ~45 large tool results) refused every
    further turn of a stock AG-UI client with 413; a window of the latest turns is a history the
    server reads as one (agents/agui/incoming._window)."""
    messages = list(messages)
    budget = settings.AGUI_SNAPSHOT_MAX_BYTES if budget is None else budget
    total, start = 0, len(messages)
    while start > 0 and total + _size(messages[start - 1]) <= budget:
        start -= 1
        total += _size(messages[start])
    if start == 0:
        return messages
    turns = [i for i in range(start, len(messages)) if messages[i].role == "user"]
    if turns:
        return messages[turns[0]:]
    # the latest turn alone weighs more: it and its replies, whatever they weigh
    earlier = [i for i in range(start) if messages[i].role == "user"]
    return messages[earlier[-1]:] if earlier else messages


# What the person reads about a settled tool call. The model reads its own text (the tool result,
# agents/runtime/runner.py); these sentences are for people and name no rule, id or instruction.
OUTCOME_TEXT = {
    "denied": ("blocked", gettext_lazy("Blocked: the rules for this tool do not allow it, so it was not run.")),
    "invalid": ("failed", gettext_lazy("The assistant asked for this in a form the tool does not accept, so it was not run.")),
    "rejected": ("rejected", gettext_lazy("Rejected, so it was not run.")),
    "repeated": ("rejected", gettext_lazy("This was already rejected earlier in this chat, so it was not asked again and "
                             "not run. Write to the assistant if you want it tried again.")),
    "responded": ("responded", gettext_lazy("Not run: the reviewer answered with guidance, which the assistant now follows.")),
    "expired": ("expired", gettext_lazy("Nobody decided in time, so it was not run.")),
    "cancelled": ("cancelled", gettext_lazy("Withdrawn before anyone decided, so it was not run.")),
    "failed": ("failed", gettext_lazy("This did not work.")),
    "outcome_unknown": ("failed", gettext_lazy("It is not known whether this finished: the service stopped while it ran.")),
    "succeeded": ("done", ""),
}


def tool_outcome(call, requester_decided=False):
    """{toolCallId, status, message, result?, said?} of a settled ToolCall for the chat; None while open.

    `status` is one of done / blocked / rejected / expired / cancelled / failed; `result` is what
    the tool itself returned (without the words added for the model) when it ran: the model's English;
    `said` is that result in the active language when the tool words it (agents/runtime/sentences.py).
    """
    found = OUTCOME_TEXT.get(call.status)
    if found is None:
        return None
    status, message = found
    own = get_tool(call.name) if call.name else None
    # only our tool's own sentences (and the runtime's refusals) word its result: an MCP server's, or a
    # file read back, that reads like one of them is not said as though our tool had done it
    func = getattr(own, "func", None)
    owners = {func.__module__, NOT_YOURS.owner} if func is not None else set()
    if status == "failed" and call.status == "failed" and call.result:  # the tool's own reason, e.g. "no subscription sub_9"
        reason = call.result[len("Error: "):] if call.result.startswith("Error: ") else call.result
        reason = person_words(reason, owners) or reason
        message = gettext("This did not work: %(reason)s.") % {"reason": reason.rstrip(".。")}
    if status == "rejected" and requester_decided:
        message = gettext("You rejected it, so it was not run.")
    if status == "responded" and requester_decided:
        message = gettext("Not run: you answered with guidance, which the assistant now follows.")
    value = {"toolCallId": call.pk, "status": status, "message": str(message)}
    # a blocked call has no approval card to name it: "Delete file: /etc/hosts", as a review would say
    tool = own if status == "blocked" else None
    if tool and tool.describe and isinstance(call.arguments, dict):
        try:
            value["title"] = tool.describe(call.arguments)
        except Exception:  # noqa: BLE001 - a describe() that cannot word these arguments leaves the tool's name
            pass
    if status == "done":
        value["result"] = call.result
        words = person_words(call.result, owners)
        if words:
            value["said"] = words
    return value


def outcome_words(call):
    """A settled call's tool message as a person reads it, in the active language: what the tool returned
    (in the reader's words where the tool words it), else why it did not run, with the reviewer's words;
    None while the call is open. What the model reads adds instructions for it ("do not try to reach the
    same goal another way"), not for people."""
    outcome = tool_outcome(call)
    return None if outcome is None else _words(call, outcome)


def approval_outcome(request_id):
    """(kind, words) of the call an approved request let run, once it ended, else None: for the request's
    page (approvals/ran.py), "done" and what the tool returned, or "failed" and why, as the chat's card says."""
    call = CallRow.objects.filter(approval_id=request_id).first()
    outcome = tool_outcome(call) if call is not None else None
    if outcome is None or outcome["status"] not in ("done", "failed"):
        return None
    return outcome["status"], _words(call, outcome)


def _words(call, outcome):
    if outcome["status"] == "done":
        return outcome.get("said") or outcome.get("result") or ""
    if outcome["status"] in ("rejected", "responded") and call.feedback:
        return gettext("%(outcome)s The reviewer wrote: “%(words)s”") % {"outcome": outcome["message"],
                                                                         "words": call.feedback}
    return outcome["message"]


def thread_standing(thread):
    """(status, sentence) of a chat's latest request for the chat list (selectors.chat_list); None without one."""
    status = thread.last_status
    if not status:
        return None
    if status == ApprovalRequest.Status.PENDING:
        word = (gettext("Waiting for %(group)s") % {"group": thread.last_group} if thread.last_group
                else gettext("Waiting for you"))
    else:
        word = ApprovalRequest.Status(status).label  # "Approved with edits", "Rejected", ...
    if status == ApprovalRequest.Status.MODIFIED:  # the description is of the call before the edit
        return status, word
    # in the reader's language (said in every language when asked), not the one the chat had then
    what = said({"description": thread.last_action, "said": thread.last_said}, "description")
    return status, gettext("%(what)s: %(why)s") % {"what": word, "why": what}


def review_badge(mode, group=None):
    """How a tool is reviewed, for the person choosing an agent: the badge's kind and its tooltip, a
    sentence of ours in the reader's language. Never the tool's description: that is written for the
    model (instructions, in English)."""
    if mode == "never":
        return "never", gettext("Runs without review")
    if mode == "deny":
        return "deny", gettext("Blocked: the assistant cannot use this tool")
    if mode in ("conditional", "model"):
        if mode == "model":
            sentence = (gettext("The assistant asks %(group)s to approve a call when it judges one needs it") % {"group": group}
                        if group else gettext("The assistant asks you to approve a call when it judges one needs it"))
        else:
            sentence = (gettext("Some calls wait for %(group)s to approve them, depending on what they do") % {"group": group}
                        if group else gettext("Some calls wait for you to approve them, depending on what they do"))
        return "conditional", sentence
    return "always", (gettext("Each call waits for %(group)s to approve it") % {"group": group}
                      if group else gettext("Each call waits for you to approve it"))
