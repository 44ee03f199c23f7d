"""Pages: the home redirect and the chat."""

from django.contrib.auth.decorators import login_required
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404, redirect, render

from approvals.access import is_reviewer
from approvals.models import ApprovalRequest
from approvals.policy import effective, policy_rows

from .catalog import load_agents
from .llm import get_model
from .llm.scripted.starters import STARTERS
from .models import Thread
from .runtime.statesync import has_state


@login_required
def home(request):
    return redirect("/inbox/" if is_reviewer(request.user) else "/chat/")


def agent_cards():
    cards, rows = [], policy_rows()
    for agent in load_agents().values():
        tools = []
        for t in agent.tools:
            p = effective(t.name, rows) or {}
            group = p.get("group")
            tools.append({
                "name": t.name,
                "description": t.description,
                "approval": p.get("mode", t.approval_mode),
                "approver": f"group:{group.name}" if group else "requester",
            })
        card = {"name": agent.name, "title": agent.title, "description": agent.description, "tools": tools,
                "starters": STARTERS.get(agent.name, []), "hasState": bool(has_state(agent))}
        if hasattr(agent, "participants"):  # a workflow (agents/runtime/workflows.py): its agents and handoff edges
            card["workflow"] = agent.card()
        cards.append(card)
    return cards


def thread_list(user):
    """The person's latest chats, each with its latest approval request (one query): two chats
    that began with the same words differ by what became of them."""
    latest = ApprovalRequest.objects.filter(thread_ref=OuterRef("pk")).order_by("-created_at")
    return (Thread.objects.filter(owner=user).order_by("-updated_at")
            .annotate(last_status=Subquery(latest.values("status")[:1]),
                      last_action=Subquery(latest.values("description")[:1]),
                      last_group=Subquery(latest.values("approver_group__name")[:1]))[:100])


STANDING = {
    ApprovalRequest.Status.APPROVED: "Approved", ApprovalRequest.Status.MODIFIED: "Approved with edits",
    ApprovalRequest.Status.REJECTED: "Rejected", ApprovalRequest.Status.EXPIRED: "Expired",
    ApprovalRequest.Status.CANCELLED: "Withdrawn", ApprovalRequest.Status.RESPONDED: "Answered with guidance",
}


def standing(thread):
    """(status, sentence) of the chat's latest request, for the list; None without one."""
    if not thread.last_status:
        return None
    if thread.last_status == ApprovalRequest.Status.PENDING:
        word = f"Waiting for {thread.last_group}" if thread.last_group else "Waiting for you"
    else:
        word = STANDING.get(thread.last_status, thread.last_status)
    if thread.last_status == ApprovalRequest.Status.MODIFIED:  # the description is of the call before the edit
        return thread.last_status, word
    return thread.last_status, f"{word}: {thread.last_action}"


@login_required
def chat(request, thread_id=None):
    thread = get_object_or_404(Thread, pk=thread_id, owner=request.user) if thread_id else None
    model = get_model()
    agents = agent_cards()
    config = {
        "threadId": thread.pk if thread else None,
        "username": request.user.username,
        "userId": request.user.pk,
        "agents": agents,
        "offlineModel": model.offline,
        "modelName": model.name,
        "wsPath": f"/ws/threads/{thread.pk}/" if thread else None,
    }
    config["hasState"] = bool(thread and next((a["hasState"] for a in agents if a["name"] == thread.agent), False))
    threads = list(thread_list(request.user))
    titles = {a["name"]: a["title"] or a["name"] for a in agents}
    for t in threads:  # the list names the agent as the picker does, and where each chat stands
        t.agent_title = titles.get(t.agent, t.agent)
        t.standing = standing(t)
    if request.GET.get("partial") == "threads":  # the list alone: another tab may have changed it
        return render(request, "agents/_thread_items.html", {"threads": threads, "thread": thread})
    return render(request, "agents/chat.html", {
        "chat_config": config,
        "threads": threads,
        "thread": thread,
        "agents": agents,
        "offline_model": model.offline,
        "model_name": model.name,
        "thread_has_state": config["hasState"],
    })
