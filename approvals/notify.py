"""Low-rate inbox notices over the channel layer (the token stream never goes this way)."""

import asyncio
import atexit
import concurrent.futures
import logging
import os
import threading

from channels.layers import get_channel_layer

from agui_project.channel_groups import group_send_many

from .signals import approval_event

log = logging.getLogger(__name__)

STAFF_GROUP = "inbox.staff"


def group_for_approver_group(group_id):
    return f"inbox.group.{group_id}"


def group_for_user(user_id):
    return f"inbox.user.{user_id}"


def group_for_viewers(approval_id):
    """The reviewers who have this request open (presence, approvals.consumers)."""
    return f"inbox.viewing.{approval_id}"


class _Sender:
    """One event loop thread per process sends the notices, one after another in the order they
    were queued (a `decided` must never overtake its `requested`). The caller (a decision, a
    paused run) does not wait for Redis, and the channel layer keeps its connections:
    async_to_sync made a new loop, hence new connections, for every target of every notice."""

    def __init__(self):
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.queue = asyncio.Queue()
        self.pending = set()  # queued and not yet sent
        threading.Thread(target=self._run, name="inbox-notices", daemon=True).start()
        atexit.register(self.drain)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._send_in_order())

    async def _send_in_order(self):
        while True:
            targets, notice, future = await self.queue.get()
            try:
                await group_send_many(get_channel_layer(), targets, {"type": "inbox.notice", "notice": notice})
            except Exception as exc:  # the inbox refetches on reconnect: a lost notice loses no data
                log.error("inbox notice %s not sent", notice.get("type"), exc_info=exc)
                future.set_exception(exc)
            else:
                future.set_result(None)
            self.pending.discard(future)

    def submit(self, targets, notice):
        future = concurrent.futures.Future()
        self.pending.add(future)
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (targets, notice, future))
        return future

    def drain(self):
        """At exit (a management command, a script) send what is queued instead of dropping it."""
        if os.getpid() == self.pid:
            concurrent.futures.wait(list(self.pending), timeout=DRAIN_SECONDS)


DRAIN_SECONDS = 5.0
_sender = None
_sender_lock = threading.Lock()


def _send(targets, notice):
    """Queue the notice for every target; returns a future that is done once it is sent."""
    global _sender
    try:
        with _sender_lock:
            if _sender is None or _sender.pid != os.getpid():  # a forked worker has no sender thread
                _sender = _Sender()
        return _sender.submit(list(targets), notice)
    except Exception:  # a lost notice loses no data
        log.exception("inbox notice %s not sent", notice.get("type"))
        return None


def _approval_notice(kind, request):
    return {
        "type": f"approval.{kind}",
        "approval": {
            "id": request.id,
            "status": request.status,
            "tool_name": request.tool_name,
            "description": request.description,
            # one notice for every reader: each page picks its language (models.said)
            "descriptions": {code: words.get("description", "") for code, words in (request.said or {}).items()},
            "expires_at": request.expires_at.isoformat() if request.expires_at else None,
            "escalated": request.escalated_at is not None,
        },
    }


def inbox_notice(kind, request):
    """kind: requested | decided | expired | cancelled | reminded | escalated | rerouted. Never fails the
    caller."""
    notice = _approval_notice(kind, request)
    targets = {STAFF_GROUP, group_for_user(request.requester_id)}
    if request.approver_group_id:
        targets.add(group_for_approver_group(request.approver_group_id))
    if request.escalation_group_id and request.escalated_at:
        targets.add(group_for_approver_group(request.escalation_group_id))
    # the same moments, for other apps (webhooks); a failing receiver is logged, never raised
    for receiver, result in approval_event.send_robust(sender=type(request), kind=kind, request=request):
        if isinstance(result, Exception):
            log.error("approval_event receiver %s failed", receiver, exc_info=result)
    return _send(sorted(targets), notice)


def ran_notice(approval_id):
    """What became of a request's approved call is known (approvals/ran.py): the pages that have it open
    (its viewers' group) show it. Its id only, so the worker that ran the call reads nothing more for it;
    without approval_event (webhooks have their own tool.outcome)."""
    return _send([group_for_viewers(approval_id)], {"type": "approval.ran", "approval": {"id": approval_id}})


def gone_notice(request, group_ids):
    """For groups that no longer decide a request (a policy routed it elsewhere): their lists drop it. Its
    id only: they may no longer read what it says."""
    targets = [group_for_approver_group(g) for g in group_ids]
    return _send(targets, {"type": "approval.gone", "approval": {"id": request.id}}) if targets else None


def user_notice(user_id, kind, request, **extra):
    """For one reviewer's own pages (kind: held | undone: their list drops or gets back a request;
    sent | not_sent, with `held` and for not_sent `by`: what became of a held decision, which the
    Undo toast tells once its window closes)."""
    return _send([group_for_user(user_id)], {**_approval_notice(kind, request), **extra})


def operator_notice(kind, payload):
    """A notice for operators (staff), e.g. a tool call whose outcome is unknown."""
    return _send([STAFF_GROUP], {"type": kind, **payload})
