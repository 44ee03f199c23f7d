"""Low-rate inbox notices over the channel layer (the token stream never goes this way)."""

import asyncio
import atexit
import concurrent.futures
import logging
import os
import threading

from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

STAFF_GROUP = "inbox.staff"


def group_for_approver_group(group_id):
    return f"inbox.group.{group_id}"


def group_for_user(user_id):
    return f"inbox.user.{user_id}"


_sender = {"pid": None, "loop": None}
_sender_lock = threading.Lock()
_pending = set()  # notices queued and not yet sent
DRAIN_SECONDS = 5.0


def _sender_loop():
    """One event loop thread per process sends the notices: the caller (a decision, a paused run)
    does not wait for Redis, and the channel layer keeps its connections (async_to_sync made a
    new loop, hence new connections, for every target of every notice)."""
    with _sender_lock:
        if _sender["pid"] != os.getpid():  # a forked worker inherits the object, not the thread
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="inbox-notices", daemon=True).start()
            _sender.update(pid=os.getpid(), loop=loop)
            _pending.clear()
            atexit.register(_drain)
        return _sender["loop"]


def _drain():
    """At exit (a management command, a script) send what is queued instead of dropping it."""
    concurrent.futures.wait(list(_pending), timeout=DRAIN_SECONDS)


async def _group_send(targets, notice):
    layer = get_channel_layer()
    for target in targets:
        await layer.group_send(target, {"type": "inbox.notice", "notice": notice})


def _sent(future):
    _pending.discard(future)
    if not future.cancelled() and future.exception() is not None:  # the inbox refetches on reconnect
        log.error("inbox notice not sent", exc_info=future.exception())


def _send(targets, notice):
    """Queue the notice for every target, in order; returns the future (tests may wait on it)."""
    try:
        future = asyncio.run_coroutine_threadsafe(_group_send(targets, notice), _sender_loop())
    except Exception:  # a lost notice loses no data
        log.exception("inbox notice %s not sent", notice.get("type"))
        return None
    _pending.add(future)
    future.add_done_callback(_sent)
    return future


def inbox_notice(kind, request):
    """kind: requested | decided | expired | cancelled | reminded | escalated. Never fails the caller."""
    notice = {
        "type": f"approval.{kind}",
        "approval": {
            "id": request.id,
            "status": request.status,
            "tool_name": request.tool_name,
            "description": request.description,
            "expires_at": request.expires_at.isoformat() if request.expires_at else None,
            "escalated": request.escalated_at is not None,
        },
    }
    targets = {STAFF_GROUP, group_for_user(request.requester_id)}
    if request.approver_group_id:
        targets.add(group_for_approver_group(request.approver_group_id))
    if request.escalation_group_id and request.escalated_at:
        targets.add(group_for_approver_group(request.escalation_group_id))
    return _send(sorted(targets), notice)


def operator_notice(kind, payload):
    """A notice for operators (staff), e.g. a tool call whose outcome is unknown."""
    return _send([STAFF_GROUP], {"type": kind, **payload})
