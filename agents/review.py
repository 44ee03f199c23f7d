"""The reviewer's read-only view of the conversation behind a request (the request page links to
it): every message, tool call and tool result of the thread, the call under review marked.

Who may read it: whoever may decide the request (or an admin). The thread belongs to its end
user; being a reviewer of some other request does not open it."""

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _

from agui_project.queries import one
from approvals import inbox as approval_inbox
from approvals import selectors as approval_selectors
from approvals import services as approval_services
from approvals.access import is_admin, is_reviewer

from .models import Thread, ToolCall
from .presenters import outcome_words


def _pretty(text):
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return text or ""


def _result(message, call):
    words = outcome_words(call) if call else None
    return _pretty(message.content if words is None else words)


@login_required
def request_conversation(request, approval_id):
    if not is_reviewer(request.user):
        raise PermissionDenied(_("The inbox is for reviewers."))
    approval = (approval_selectors.visible_requests(user=request.user).filter(pk=approval_id)
                .select_related("requester").first())
    if approval is None or not approval.thread_ref:
        raise Http404("no such request")
    if not (is_admin(request.user) or approval_services.can_decide(request.user, approval)):
        raise PermissionDenied(_("Only the reviewers who decide this request may read its conversation."))
    thread = one(Thread.objects.filter(pk=approval.thread_ref))
    if thread is None:
        raise Http404("the conversation was deleted")
    items, names = [], {}
    # a tool message as the chat's card says it, not with the instructions the model reads (presenters.outcome_words)
    settled = {c.pk: c for c in ToolCall.objects.filter(thread=thread)}
    for m in thread.messages.order_by("seq"):
        calls = []
        for c in m.tool_calls or []:
            if not isinstance(c, dict):
                continue
            function = c.get("function") or {}
            names[c.get("id")] = function.get("name", "")
            calls.append({"name": function.get("name", ""), "arguments": _pretty(function.get("arguments")),
                          "under_review": c.get("id") == approval.tool_call_ref})
        items.append({"message": m, "calls": calls, "tool_name": names.get(m.tool_call_id, ""),
                      "result": _result(m, settled.get(m.tool_call_id)) if m.role == "tool" else ""})
    return render(request, "agents/review_conversation.html", {
        "approval": approval, "thread": thread, "items": items,
        "pending_count": approval_inbox.pending_mine_count(request.user),  # the nav badge
    })
