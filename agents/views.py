"""Pages: the home redirect and the chat."""

from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext

from approvals.access import is_reviewer
from approvals.filters import parse_moment
from approvals.policy import effective, policy_rows

from . import presenters, selectors
from .catalog import load_agents
from .llm import get_model
from .llm.scripted.starters import starters
from .models import Thread
from .runtime.statesync import has_state


@login_required
def home(request):
    return redirect("/inbox/" if is_reviewer(request.user) else "/chat/")


def agent_cards():
    cards, rows = [], policy_rows()
    for agent in load_agents().values():
        tools = []
        for t in agent.all_tools():  # its own and its MCP servers' (agents/mcp_servers/)
            p = effective(t.name, rows) or {}
            group = p.get("group")
            # the badge says how calls are reviewed in a sentence of ours; the tool's description is the
            # model's (instructions, in English) and is not sent to the page at all
            badge, review = presenters.review_badge(p.get("mode", t.approval_mode), group.name if group else None)
            tools.append({
                "name": t.name,
                "approval": badge,
                "review": review,
                "approver": f"group:{group.name}" if group else "requester",
            })
        # an agent's title and description are marked (gettext_noop) where it is defined, said here in
        # the reader's language; its starter prompts too
        card = {"name": agent.name, "title": gettext(agent.title) if agent.title else agent.title,
                "description": gettext(agent.description) if agent.description else agent.description,
                "tools": tools, "starters": starters(agent.name), "hasState": bool(has_state(agent))}
        if hasattr(agent, "participants"):  # a workflow (agents/runtime/workflows.py): its agents and handoff edges
            card["workflow"] = agent.card()
        cards.append(card)
    return cards


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
        # the id is the client's (AG-UI threadId): "?" or "#" in it would end the socket's path
        "wsPath": f"/ws/threads/{quote(thread.pk, safe='')}/" if thread else None,
    }
    config["hasState"] = bool(thread and next((a["hasState"] for a in agents if a["name"] == thread.agent), False))
    before = _chats_before(request.GET.get("before", ""))
    threads = list(selectors.chat_list(request.user, before=before))
    pages = _chat_pages(request, threads, before)
    titles = {a["name"]: a["title"] or a["name"] for a in agents}
    for t in threads:  # the list names the agent as the picker does, and where each chat stands
        t.agent_title = titles.get(t.agent, t.agent)
        t.standing = presenters.thread_standing(t)
    if request.GET.get("partial") == "threads":  # the list alone: another tab may have changed it
        return render(request, "agents/_thread_items.html", {"threads": threads, "thread": thread, **pages})
    return render(request, "agents/chat.html", {
        "chat_config": config,
        "threads": threads,
        "thread": thread,
        "agents": agents,
        "offline_model": model.offline,
        "model_name": model.name,
        "thread_has_state": config["hasState"],
        # the composer's limit, the API's own, counted in characters (code points) by chat.js: a maxlength
        # attribute counts UTF-16 units and cut an emoji-rich message the server would take
        "max_message_chars": settings.AGUI_MAX_MESSAGE_CHARS,
        **pages,
    })


def _chats_before(cursor):
    """(updated_at, id) of a `before` cursor ("<moment>|<id>"), None for none or a mangled one (the newest)."""
    moment, bar, pk = cursor.partition("|")
    moment = parse_moment(moment) if bar and pk else None
    return (moment, pk) if moment is not None else None


def _chat_pages(request, threads, before):
    """The list's ways to its older chats and back to the newest: `threads` loses its look-ahead row.
    A chat made or written to meanwhile goes to the top of the newest, as the list is sorted."""
    more = len(threads) > selectors.CHATS_A_PAGE
    del threads[selectors.CHATS_A_PAGE:]
    path = quote(request.path)  # a client's thread id may hold "#" or "?" (request.path is decoded)
    older = None
    if more:
        last = threads[-1]
        older = f"{path}?{urlencode({'before': f'{last.updated_at.isoformat()}|{last.pk}'})}"
    # a chat opened from an older page keeps the list on that page
    here = urlencode({"before": request.GET["before"]}) if before is not None else ""
    return {"older_chats": older, "newest_chats": path if before is not None else None, "chats_page": here}
