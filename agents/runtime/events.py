"""AG-UI events (ag_ui.core models) -> the thread's Redis Stream, and back out to clients.

One stream per thread (`agui:thread:<id>`). Writers pipeline XADDs (a batch at once after a
quiet spell, else at most one per 1 ms or at 32 events: within DESIGN.md's "<= 5 ms"); readers
use XREAD BLOCK from the last id they saw.
"""

import asyncio
import logging
import os
import queue
import threading
import time

import redis
import redis.asyncio
from ag_ui.core import BaseEvent, EventType, TextMessageContentEvent
from django.conf import settings

from agui_project.redis_client import brief_client, redis_client

# A batch goes as soon as the writer is free and at most one per FLUSH_SECONDS: an event after
# a quiet spell leaves at once (the paced-stream latency), a burst is grouped (fewer XADD round
# trips and reader wake-ups). A 5 ms window on every first event cost ~2.5 ms per event at p50.
FLUSH_SECONDS = 0.001
FLUSH_EVENTS = 32
BLOCK_MS = 4000  # under redis-py's 5 s socket timeout, or an idle XREAD BLOCK fails as a timeout


def is_entry_id(value):
    """A stream entry id Redis takes as a position: "<ms>" or "<ms>-<seq>", each a 64-bit unsigned
    number (what a client resumes after; anything else Redis refuses with an error)."""
    parts = value.split("-") if isinstance(value, str) else ()
    return 0 < len(parts) <= 2 and all(p.isascii() and p.isdigit() and len(p) <= 20 and int(p) < 2 ** 64
                                       for p in parts)
IDLE_WRITERS = 8  # writer threads kept for the next runs of this process

log = logging.getLogger(__name__)


class StreamUnavailable(Exception):
    """Redis stayed unreachable past the client's retries: this run's events cannot be written."""

def stream_key(thread_id):
    return f"agui:thread:{thread_id}"


def now_ms():
    return int(time.time() * 1000)


def encode(event: BaseEvent) -> str:
    if event.timestamp is None:
        event.timestamp = now_ms()
    return event.model_dump_json(by_alias=True)


def _xadd_all(pipe, key, payloads):
    for payload in payloads:
        pipe.xadd(key, {"e": payload}, maxlen=settings.AGUI_STREAM_MAXLEN, approximate=True)
    pipe.expire(key, settings.AGUI_STREAM_TTL)


def append(thread_id, *events):
    """Append events at once (low-rate callers: start_run, decisions). Returns the last entry id."""
    return append_encoded(thread_id, *[encode(e) for e in events])


def append_encoded(thread_id, *payloads):
    """Append events already serialised (a run's end kept while Redis was down)."""
    pipe = redis_client().pipeline(transaction=False)
    queue_append(pipe, thread_id, payloads)
    return last_entry_id(pipe.execute())


def notice(thread_id, *events):
    """append() for a notice sent after a commit by a caller that has an answer without Redis (the
    notice logged as lost, or a run's end kept for the beat): through the brief client, so that a
    request does not wait out the product client's retries (~12 s) while Redis is down. A chat that
    missed it gets the snapshots: its socket closed with 4011 meanwhile."""
    pipe = brief_client().pipeline(transaction=False)
    queue_append(pipe, thread_id, [encode(e) for e in events])
    return last_entry_id(pipe.execute())


def queue_append(pipe, thread_id, payloads):
    """append_encoded's commands, on the caller's pipeline; last_entry_id() reads its replies."""
    _xadd_all(pipe, stream_key(thread_id), payloads)


def last_entry_id(replies):
    """The last entry id among queue_append's replies (its XADDs, then an EXPIRE), or None."""
    ids = replies[:-1]
    if not ids:
        return None
    return ids[-1].decode() if isinstance(ids[-1], bytes) else ids[-1]


def _merge_text(events):
    """Coalesce consecutive text deltas of one message: fewer, larger events, same text."""
    merged = []
    for event in events:
        prev = merged[-1] if merged else None
        if (
            isinstance(event, TextMessageContentEvent)
            and isinstance(prev, TextMessageContentEvent)
            and prev.message_id == event.message_id
        ):
            prev.delta += event.delta
        else:
            merged.append(event)
    return merged


class _Writers:
    """The threads that write runs' events, kept when their run ends for the next one: starting a
    thread (0.1-0.4 ms here) and joining it were on every run's way to its first event and to its
    end. Not a ThreadPoolExecutor: its threads are not daemons, so a stream left open would hold
    the process at exit; nor is a writer ever shared by two runs at once (each blocks on its own)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle = []  # the inboxes of threads waiting for a run

    def run(self, loop, done):
        """loop() on a thread of its own; `done` is set when it returns."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="events", daemon=True).start()
        inbox.put((loop, done))

    def _serve(self, inbox):
        while True:
            loop, done = inbox.get()
            try:
                loop()
            except Exception:  # the loop surfaces Redis errors to its runner; anything else ends here
                log.exception("event writer failed")
            finally:
                done.set()
            with self._lock:
                if len(self._idle) >= IDLE_WRITERS:
                    return
                self._idle.append(inbox)

    def after_fork(self):
        """A forked child (a prefork worker) has none of its parent's threads."""
        self._lock = threading.Lock()
        self._idle = []


_writers = _Writers()
os.register_at_fork(after_in_child=_writers.after_fork)


class EventStream:
    """A run's writer: emit() is cheap; a background thread (_Writers) pipelines batches to Redis."""

    def __init__(self, thread_id):
        self.key = stream_key(thread_id)
        self._buffer = []
        self._last_flush = 0.0  # monotonic time the last batch was taken
        self._cond = threading.Condition()
        self._closed = False
        self._inflight = False
        self._error = None
        self._done = threading.Event()
        _writers.run(self._loop, self._done)

    def emit(self, event: BaseEvent):
        if event.timestamp is None:
            event.timestamp = now_ms()
        with self._cond:
            if self._error:
                raise self._error
            self._buffer.append(event)
            if len(self._buffer) == 1 or len(self._buffer) >= FLUSH_EVENTS:
                self._cond.notify_all()

    def flush(self):
        """Block until everything emitted so far is in Redis."""
        with self._cond:
            self._last_flush = 0.0  # due now
            self._cond.notify_all()
            while (self._buffer or self._inflight) and not self._error:
                self._cond.wait(0.05)
            if self._error:
                raise self._error

    def close(self):
        try:
            self.flush()
        except StreamUnavailable:
            pass  # already raised to the runner on an emit or flush; its end is kept for the beat
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._done.wait(timeout=5)

    def _loop(self):
        client = redis_client()
        while True:
            with self._cond:
                while not self._buffer and not self._closed:
                    self._cond.wait()
                if not self._buffer and self._closed:
                    return
                while len(self._buffer) < FLUSH_EVENTS and not self._closed:
                    remaining = self._last_flush + FLUSH_SECONDS - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                batch, self._buffer = self._buffer, []
                self._inflight = True
                self._last_flush = time.monotonic()
            try:
                pipe = client.pipeline(transaction=True)  # all or nothing: a retried batch is not doubled
                _xadd_all(pipe, self.key, [encode(e) for e in _merge_text(batch)])
                pipe.execute()
            except Exception as exc:  # surfaced to the runner on its next emit/flush
                with self._cond:
                    self._error = StreamUnavailable(f"events for {self.key} could not be written: {exc!r}")
                    self._error.__cause__ = exc
                    self._buffer = []  # the run is ending: nothing after this could be written in order
            finally:
                with self._cond:
                    self._inflight = False
                    self._cond.notify_all()


def discard(thread_id):
    """Drop a deleted thread's stream (its replay buffer must not outlive it). Asked of the brief
    client: a request makes or deletes the thread, and a failure is only logged (the stream expires)."""
    brief_client().delete(stream_key(thread_id))


def before(entry_id):
    """The entry id just before `entry_id`: a read after it starts with that entry."""
    ms, seq = (int(part) for part in entry_id.split("-"))
    return f"{ms}-{seq - 1}" if seq else f"{ms - 1}-{2**64 - 1}"


def last_id_sync(thread_id):
    entries = redis_client().xrevrange(stream_key(thread_id), count=1)
    return entries[0][0].decode() if entries else "0-0"


# --- reading (async: Daphne's consumers and SSE views) ------------------------------------

# by the loop itself: by its id, a loop made after another was gone (its id reused: tests make one
# per async_to_sync) was handed the dead loop's client, whose pool's lock was bound to that loop
# ("Lock ... is bound to a different event loop"), and its reads still in flight
_async_clients = {}


def _of_this_loop(per_loop, make):
    """per_loop[the running loop], made with make() the first time; closed loops' entries are
    dropped then (a process that serves has one loop: tests make many)."""
    loop = asyncio.get_running_loop()
    value = per_loop.get(loop)
    if value is None:
        for closed in [other for other in per_loop if other.is_closed()]:
            del per_loop[closed]
        value = per_loop[loop] = make()
    return value
# Every XREAD BLOCK holds a connection while it waits. redis-py 8 caps an asyncio pool at 100
# connections by default, and a 101st waiting reader failed with MaxConnectionsError (the
# socket closed 1011): watchers of distinct threads in one Daphne process each need one.
READER_CONNECTIONS = int(getattr(settings, "AGUI_STREAM_READER_CONNECTIONS", 2000))


def async_redis_client():
    """A client per event loop: redis.asyncio connections belong to the loop that made them."""
    return _of_this_loop(_async_clients, lambda: redis.asyncio.Redis.from_url(
        settings.REDIS_URL, socket_timeout=None, max_connections=READER_CONNECTIONS))


async def last_id(thread_id):
    entries = await async_redis_client().xrevrange(stream_key(thread_id), count=1)
    return entries[0][0].decode() if entries else "0-0"


def entry_key(entry_id):
    """An entry id as a sortable pair: "<ms>" is "<ms>-0", as Redis reads it."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


async def continues_after(thread_id, after):
    """Whether reading after `after` gives everything that followed it: the stream holds it (its
    first entry is not later, nor its last earlier), or it is the start ("0-0"). Not when entries
    that followed it were trimmed (AGUI_STREAM_MAXLEN) or the stream expired, nor for a position
    past the stream's end: a read after a position later than any entry waits until the clock
    gets there, so a socket resumed at one heard nothing, ever."""
    position = entry_key(after)
    if position == (0, 0):
        return True
    try:  # its first and last entries in one command
        info = await async_redis_client().xinfo_stream(stream_key(thread_id))
    except redis.ResponseError:  # no such stream: it expired
        return False
    first, last = info.get("first-entry"), info.get("last-entry")
    return bool(first and last) and entry_key(_text(first[0])) <= position <= entry_key(_text(last[0]))


def _text(entry_id):
    return entry_id.decode() if isinstance(entry_id, bytes) else entry_id


_inflight_reads = {}  # loop -> {(thread, after, block, count): _SharedRead}


class Batch(list):
    """[(entry_id, json_text), ...] read together. Every reader of a shared read gets this same
    object, so what each would make of it alike (a socket's frames) is made once, in `memo`."""

    def __init__(self, entries=()):
        super().__init__(entries)
        self.memo = {}


async def _xread(thread_id, after, block_ms, count):
    result = await async_redis_client().xread({stream_key(thread_id): after}, block=block_ms, count=count)
    if not result:
        return Batch()
    return Batch((entry_id.decode(), fields[b"e"].decode()) for entry_id, fields in result[0][1])


class _SharedRead:
    def __init__(self, reads, key, coro):
        self.reads, self.key, self.waiters = reads, key, 0
        self.followers = set()  # follow()'s Followers waiting on this read
        self.task = asyncio.ensure_future(coro)
        self.task.add_done_callback(self._done)

    def _done(self, task):
        if self.reads.get(self.key) is self:
            del self.reads[self.key]
        followers, self.followers = list(self.followers), set()
        if task.cancelled() or task.exception() is not None:  # retrieved: nobody may be left to await it
            for follower in followers:
                follower.end(task.exception() if not task.cancelled() else asyncio.CancelledError())
            return
        batch = task.result()
        # before any reader's task is woken (this callback was added first): the followers' frames
        # go out in one pass
        for follower in followers:
            follower.take(batch)

    def leave(self):
        self.waiters -= 1
        self.cancel_if_unwanted()

    def cancel_if_unwanted(self):
        if self.waiters == 0 and not self.followers and not self.task.done():
            # the last reader went away: stop waiting on Redis; a newcomer starts a fresh read
            if self.reads.get(self.key) is self:
                del self.reads[self.key]
            self.task.cancel()


def _shared_read(thread_id, after, block_ms, count):
    reads, key = _of_this_loop(_inflight_reads, dict), (thread_id, after, block_ms, count)
    shared = reads.get(key)
    if shared is None or shared.task.done():
        # a finished read is never reused: awaiting a done task does not yield to the loop, so a
        # reader that got [] (the block timed out) would spin on it before its cleanup could run
        shared = reads[key] = _SharedRead(reads, key, _xread(thread_id, after, block_ms, count))
    return shared


async def read(thread_id, after, block_ms=BLOCK_MS, count=500):
    """A Batch [(entry_id, json_text), ...] after `after`; empty when nothing arrived within block_ms.

    Readers of one thread at one position share a single XREAD (the clients of a watched chat
    are all at the same entry after each batch): one connection and one decode for all of
    them instead of one each. The read runs in its own task, so one reader going away does
    not cancel it for the others; it is cancelled when the last one goes (and no follower waits).
    """
    shared = _shared_read(thread_id, after, block_ms, count)
    shared.waiters += 1
    try:
        return await asyncio.shield(shared.task)
    finally:
        shared.leave()


class Follower:
    """follow()'s handle: `after`, the last entry handed to `deliver`; `ended` (a future), set to
    None when `deliver` asked to stop, or to the exception a read raised; stop() leaves the reads."""

    def __init__(self, thread_id, deliver, block_ms, count):
        self.thread_id, self.deliver, self.block_ms, self.count = thread_id, deliver, block_ms, count
        self.ended = asyncio.get_running_loop().create_future()
        self._shared = None

    def attach(self, after):
        self.after = after
        self._shared = _shared_read(self.thread_id, after, self.block_ms, self.count)
        self._shared.followers.add(self)

    def take(self, batch):
        """The shared read's batch (empty: its block timed out), in its done callback."""
        self._shared = None
        if self.ended.done():
            return
        if batch:
            self.after = batch[-1][0]  # handed over, whatever deliver makes of it
            try:
                more = self.deliver(batch)
            except Exception as exc:
                self.end(exc)
                return
            if not more:
                self.end(None)
                return
        self.attach(self.after)

    def end(self, exc):
        self._shared = None
        if not self.ended.done():
            self.ended.set_result(exc)

    def stop(self):
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.followers.discard(self)
            shared.cancel_if_unwanted()
        self.end(None)


def follow(thread_id, after, deliver, block_ms=BLOCK_MS, count=500):
    """Every non-empty batch after `after` to deliver(batch), called synchronously (it must not
    await) by the shared read's own callback as the batch arrives, before any reader's task
    wakes; the follower is then put on the next shared read by that callback too. No task of the
    caller's wakes per batch: 500 sockets on a thread cost one pass over them per batch, not 500
    wake-ups, each joining the next read again. `deliver` returns whether to go on. Returns the
    Follower: await its `ended`, stop() it when done."""
    follower = Follower(thread_id, deliver, block_ms, count)
    follower.attach(after)
    return follower


async def range_from(thread_id, start):
    """Entries from `start` (inclusive) to now, for replaying an active run."""
    entries = await async_redis_client().xrange(stream_key(thread_id), min=start)
    return [(entry_id.decode(), fields[b"e"].decode()) for entry_id, fields in entries]


__all__ = ["EventStream", "EventType", "StreamUnavailable", "append", "encode", "read", "range_from", "last_id", "redis_client"]
