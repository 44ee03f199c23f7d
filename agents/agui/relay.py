"""The SSE relay: one run's events from the thread's Redis Stream, from its RUN_STARTED to its end.

Keep-alives while the run is quiet, a RUN_ERROR when Redis stays away past the grace period, and
the run's ending from the database (replay.py) when the stream lost its beginning. A run that ends
waiting on someone else's review (a group) is followed: the response stays open for up to
`review_wait` seconds and carries the continuation (RUN_STARTED with parentRunId after the paused
run's RUN_FINISHED: @ag-ui/client's verifier accepts a new run after a finished one in one stream).
"""

import asyncio
import functools
import json
import logging
from asyncio import sleep
from dataclasses import dataclass, field
from time import monotonic

import redis
from ag_ui.core import PROTOCOL_VERSION, MessagesSnapshotEvent, RunErrorEvent, RunStartedEvent
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.utils.translation import gettext as _

from agents import dispatch, watching
from agents.agui import replay
from agents.runtime import events

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15
TERMINAL = ('{"type":"RUN_FINISHED"', '{"type":"RUN_ERROR"')


@dataclass
class Plan:
    thread_id: str
    run_id: str = ""
    position: str = "0-0"
    error: RunErrorEvent | None = None
    after_start: list = field(default_factory=list)  # events injected right after RUN_STARTED
    replayed: list = field(default_factory=list)  # runs that ended, rebuilt from the database, sent first
    parent_run_id: str = ""  # relay the continuation of this run (instead of run_id), if one comes in time
    review_wait: float = 0  # seconds to wait for the continuation of a run paused on another's review
    head: tuple | None = None  # (stream entry id, RUN_STARTED) of run_id, as this process wrote it
    deferred: list = field(default_factory=list)  # its (run id, entry id) to hand to a worker (dispatch)
    watch: watching.Watch | None = None  # the relay's watcher, joined already
    start_sent: bool = False  # the client has run_id's RUN_STARTED already (endpoint.early_start)


# Characters JSON may leave unescaped in a string but Python's str.splitlines() ends a line at: SSE
# clients that read lines with it (httpx's iter_lines(), as Microsoft Agent Framework's AGUIChatClient
# does) cut such a data line in two and drop the event. Their JSON escapes mean the same to any parser.
_SPLITLINES_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def frame(payload):
    if "\u2028" in payload or "\u2029" in payload or "\x85" in payload:
        payload = payload.translate(_SPLITLINES_BREAKS)
    return f"data: {payload}\n\n"


def released(fn):
    """fn, then this thread's database connections given back (to the pool): a stream waits on Redis
    for as long as its run (and a review) lasts and holds none meanwhile. Ten open streams held a web
    process's whole pool (AGUI_DB_POOL_SIZE) until they ended, and every other request of the process
    waited 10 s for a 503."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            for conn in connections.all(initialized_only=True):
                if not conn.in_atomic_block:  # a caller's open transaction (a test's) is left to it
                    conn.close()

    return run


HAND_OVER_LATEST = 1.0  # seconds: a plan's deferred run goes to a worker by then even if nothing was sent
_handing_over = set()  # strong references to the fallback tasks (the loop keeps only weak ones)


async def hand_over(plan):
    """The plan's deferred runs to a worker (dispatch.announced(defer=True)), once: its Celery
    publish (~1 ms of CPU) and the worker it wakes come after the first frame, not before it."""
    pending, plan.deferred = plan.deferred, []
    if pending:
        await sync_to_async(dispatch.hand_over_all, thread_sensitive=False)(pending)


def hand_over_later(plan):
    """hand_over(plan) after HAND_OVER_LATEST unless the relay did it: for a response that never
    starts (a client gone before it), whose generator never runs."""

    def due():
        if plan.deferred:
            task = asyncio.ensure_future(hand_over(plan))
            _handing_over.add(task)
            task.add_done_callback(_handing_over.discard)

    asyncio.get_running_loop().call_later(HAND_OVER_LATEST, due)


async def watched_relay(plan):
    """relay(plan), its client counted as a watcher of the thread (agents/watching.py). When the
    client goes away before the run's end, Daphne cancels the response (asyncio.CancelledError
    here) or the generator is closed (GeneratorExit): the run is then marked abandoned."""
    if plan.error:
        async for chunk in relay(plan):
            yield chunk
        return
    watch, ended = plan.watch or watching.Watch(plan.thread_id, plan.run_id), False
    inner = relay(plan)
    # the watcher joins while the first read waits (one Redis round trip less before RUN_STARTED);
    # it has joined before anything is sent (a plan's own watch joined with its run)
    joining = None if watch.joined else asyncio.ensure_future(watch.renew())
    try:
        async for chunk in inner:
            if joining is not None:
                await joining
                joining = None
            await watch.renew()
            ended = _ends(chunk)  # a client gone right after the end did not abandon the run
            yield chunk
            if plan.deferred:  # the first frame is sent: now wake the worker
                await hand_over(plan)
        ended = True
    finally:
        if plan.deferred:  # the client went before the first frame: the run goes on regardless
            await asyncio.shield(asyncio.ensure_future(hand_over(plan)))
        if joining is not None:
            await asyncio.shield(joining)  # its ZADD before the leave's ZREM
        await inner.aclose()
        await watch.leave(abandoned=not ended)


async def closed_on_error(body, thread_id, run_id):
    """`body`'s frames, and after an exception inside it (a wait for a pooled connection that ran
    out while the run was handed over) a RUN_ERROR that ends the stream (or nothing more, after a
    run's end): past the first frame, Daphne can send no error page and left the response open and
    silent until the client's own timeout. The run itself goes on (a worker has it or recovery will)."""
    sent = ended = False
    try:
        async for chunk in body:
            sent, ended = True, _ends(chunk)
            yield chunk
    except Exception:  # noqa: BLE001  (not the client going away: that is CancelledError / GeneratorExit)
        log.exception("AG-UI stream of run %s (thread %s) failed", run_id, thread_id)
        if ended:
            return
        lost = RunErrorEvent(code="stream_failed", message=_(
            "The server lost this stream; the run may still finish. Reconnect to follow the thread."))
        head = "" if sent else frame(events.encode(RunStartedEvent(thread_id=thread_id, run_id=run_id,
                                                                      protocol_version=PROTOCOL_VERSION)))
        yield head + frame(events.encode(lost))
    finally:
        await body.aclose()  # its own ending (a watcher's leave, a hand-over) runs now, not at collection


def _ends(chunk):
    """Whether the chunk's last frame is a run's end (frames are split by a blank line, which
    JSON text cannot hold)."""
    last = chunk.rfind("\n\ndata: ")
    return chunk[last + 2 if last >= 0 else 0:].startswith(tuple("data: " + t for t in TERMINAL))


async def relay(plan):
    """This run's events, from its RUN_STARTED to its end, one SSE frame each, batch by batch."""
    if plan.error:
        # a run's events begin with RUN_STARTED, even when it is refused before anything
        # happens (ag-ui-validate AGUI001); no Run row exists, so the id stays free for a retry
        started = RunStartedEvent(thread_id=plan.thread_id, run_id=plan.run_id, protocol_version=PROTOCOL_VERSION)
        head = () if plan.start_sent else (started,)
        yield "".join(frame(events.encode(e)) for e in (*head, *plan.after_start, plan.error))
        return
    if plan.replayed:
        yield "".join(frame(events.encode(e)) for e in plan.replayed)
    if not (plan.run_id or plan.parent_run_id):
        return
    after, started, last_write, lost_since = plan.position, False, monotonic(), None
    following = bool(plan.parent_run_id)  # waiting for a continuation: there may never be one
    deadline = monotonic() + plan.review_wait
    if following:
        run_marker = '"parentRunId":' + json.dumps(plan.parent_run_id, ensure_ascii=False)
    else:
        run_marker = '"runId":' + json.dumps(plan.run_id, ensure_ascii=False)
    checked = monotonic()  # when the database was last asked whether the run ended unseen

    def ours(payload):
        return payload.startswith('{"type":"RUN_STARTED"') and run_marker in payload

    if plan.head and not following:  # this process wrote the run's RUN_STARTED: no read back
        after, payload = plan.head
        started = True
        first = [] if plan.start_sent else [frame(payload)]
        first += [frame(events.encode(e)) for e in plan.after_start]
        if first:
            yield "".join(first)
            last_write = monotonic()

    while True:
        chunk = []
        # block until the next keep-alive is due at most (and under the Redis socket timeout)
        due_ms = int((last_write + KEEPALIVE_SECONDS - monotonic()) * 1000)
        if following and not started:
            if monotonic() >= deadline:
                return  # nobody decided in time: the stream ends after the paused run's RUN_FINISHED
            due_ms = min(due_ms, int((deadline - monotonic()) * 1000) + 1)
        block_ms = max(1, min(events.BLOCK_MS, due_ms))  # XREAD BLOCK 0 would wait forever
        try:
            batch = await events.read(plan.thread_id, after, block_ms=block_ms)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            # Redis is away: wait for it (keeping the client's connection alive), and past the
            # grace period end this client's stream with a RUN_ERROR rather than a dropped socket
            lost_since = lost_since or monotonic()
            grace = settings.AGUI_STREAM_GRACE_SECONDS
            if following and not started:
                # waiting for a continuation after the paused run's RUN_FINISHED: a restart within the
                # grace is waited out (the decision may come once Redis is back); past it, or the
                # review's deadline, the stream ends cleanly, as nothing of a new run was sent
                if monotonic() - lost_since > grace or monotonic() >= deadline:
                    return
            elif monotonic() - lost_since > grace:
                log.warning("SSE relay of run %s: Redis unreachable for %ss: %r", plan.run_id, grace, exc)
                lost = RunErrorEvent(code="stream_unavailable", message=_(
                    "The live connection (Redis) was lost; the run may still finish. Reconnect to follow the thread."))
                head = "" if started or plan.start_sent else frame(events.encode(RunStartedEvent(
                    thread_id=plan.thread_id, run_id=plan.run_id, protocol_version=PROTOCOL_VERSION)))
                yield head + frame(events.encode(lost))
                return
            await sleep(1.0)
            if monotonic() - last_write >= KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                last_write = monotonic()
            continue
        lost_since = None
        an_end = False
        for entry_id, payload in batch:
            after = entry_id
            if not started:
                # the stream may hold the tail of earlier runs and decision notices: skip to ours
                if ours(payload):
                    started = True
                    if not plan.start_sent:
                        chunk.append(frame(payload))
                    if following:  # what the resume's POST would have sent: decisions, the conversation
                        head = await sync_to_async(released(replay.continuation_head))(json.loads(payload)["runId"])
                        chunk.extend(frame(events.encode(e)) for e in head)
                    chunk.extend(frame(events.encode(e)) for e in plan.after_start)
                else:
                    an_end = an_end or payload.startswith(TERMINAL)
                continue
            chunk.append(frame(payload))
            if payload.startswith(TERMINAL):
                yield "".join(chunk)
                async for more in follow_review(plan, payload, entry_id):
                    yield more
                return
        if not following and not started and (an_end or monotonic() - checked >= KEEPALIVE_SECONDS):
            # Redis lost the stream before this relay saw the run begin (a restart): the run goes
            # on unseen, so the database says when it has ended, and the client gets that ending
            checked = monotonic()
            ended = await sync_to_async(released(replay.ended_run))(plan.run_id)
            # its RUN_STARTED preceded its ending: a start written since the read above is read next
            try:
                unread = await events.range_from(plan.thread_id, after) if ended else []
            except (redis.ConnectionError, redis.TimeoutError):
                ended = None  # Redis went away again: the next read waits for it (the grace above)
            if ended and not any(ours(p) for _, p in unread):
                log.warning("SSE relay of run %s: its start was lost from the stream; ending from the database",
                            plan.run_id)
                head = () if plan.start_sent else (RunStartedEvent(
                    thread_id=plan.thread_id, run_id=plan.run_id, protocol_version=PROTOCOL_VERSION),)
                responses = [e for e in plan.after_start if not isinstance(e, MessagesSnapshotEvent)]
                yield "".join(frame(events.encode(e)) for e in (*head, ended[0], *responses, *ended[1:]))
                return
        if chunk:
            yield "".join(chunk)
            last_write = monotonic()
        elif monotonic() - last_write >= KEEPALIVE_SECONDS:
            yield ": keep-alive\n\n"
            last_write = monotonic()


async def follow_review(plan, payload, entry_id):
    """After a run's RUN_FINISHED: when it waits on someone else's review, its continuation."""
    if not plan.review_wait or not payload.startswith('{"type":"RUN_FINISHED"'):
        return
    ended = json.loads(payload)["runId"]
    if await sync_to_async(released(replay.awaits_review))(ended):
        nxt = Plan(thread_id=plan.thread_id, parent_run_id=ended, position=entry_id, review_wait=plan.review_wait)
        async for chunk in relay(nxt):
            yield chunk
