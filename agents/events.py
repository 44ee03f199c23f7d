"""AG-UI events (ag_ui.core models) -> the thread's Redis Stream, and back out to clients.

One stream per thread (`agui:thread:<id>`). Writers pipeline XADDs (flushed every <= 5 ms or
32 events, DESIGN.md "Events"); readers use XREAD BLOCK from the last id they saw.
"""

import threading
import time

import redis
import redis.asyncio
from ag_ui.core import BaseEvent, EventType, TextMessageContentEvent
from django.conf import settings

FLUSH_SECONDS = 0.005
FLUSH_EVENTS = 32
BLOCK_MS = 4000  # under redis-py's 5 s socket timeout (NOTES.md)

_client = None
_client_lock = threading.Lock()


def stream_key(thread_id):
    return f"agui:thread:{thread_id}"


def redis_client():
    """One persistent client per process (redis-py pools connections and is thread-safe)."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=10, health_check_interval=30)
    return _client


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
    key = stream_key(thread_id)
    pipe = redis_client().pipeline(transaction=False)
    _xadd_all(pipe, key, [encode(e) for e in events])
    ids = pipe.execute()[:-1]
    return ids[-1].decode() if ids else None


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


class EventStream:
    """A run's writer: emit() is cheap; a background thread pipelines batches to Redis."""

    def __init__(self, thread_id):
        self.key = stream_key(thread_id)
        self._buffer = []
        self._first_at = 0.0
        self._cond = threading.Condition()
        self._closed = False
        self._inflight = False
        self._error = None
        self._thread = threading.Thread(target=self._loop, name=f"events-{thread_id}", daemon=True)
        self._thread.start()

    def emit(self, event: BaseEvent):
        if event.timestamp is None:
            event.timestamp = now_ms()
        with self._cond:
            if self._error:
                raise self._error
            if not self._buffer:
                self._first_at = time.monotonic()
            self._buffer.append(event)
            if len(self._buffer) == 1 or len(self._buffer) >= FLUSH_EVENTS:
                self._cond.notify_all()

    def flush(self):
        """Block until everything emitted so far is in Redis."""
        with self._cond:
            self._first_at = 0.0  # due now
            self._cond.notify_all()
            while (self._buffer or self._inflight) and not self._error:
                self._cond.wait(0.05)
            if self._error:
                raise self._error

    def close(self):
        try:
            self.flush()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._thread.join(timeout=5)

    def _loop(self):
        client = redis_client()
        while True:
            with self._cond:
                while not self._buffer and not self._closed:
                    self._cond.wait()
                if not self._buffer and self._closed:
                    return
                while len(self._buffer) < FLUSH_EVENTS and not self._closed:
                    remaining = self._first_at + FLUSH_SECONDS - time.monotonic()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                batch, self._buffer = self._buffer, []
                self._inflight = True
            try:
                pipe = client.pipeline(transaction=False)
                _xadd_all(pipe, self.key, [encode(e) for e in _merge_text(batch)])
                pipe.execute()
            except Exception as exc:  # surfaced to the runner on its next emit/flush
                with self._cond:
                    self._error = exc
            finally:
                with self._cond:
                    self._inflight = False
                    self._cond.notify_all()


def last_id_sync(thread_id):
    entries = redis_client().xrevrange(stream_key(thread_id), count=1)
    return entries[0][0].decode() if entries else "0-0"


# --- reading (async: Daphne's consumers and SSE views) ------------------------------------

_async_clients = {}


def async_redis_client():
    """A client per event loop: redis.asyncio connections belong to the loop that made them."""
    import asyncio

    loop = asyncio.get_running_loop()
    client = _async_clients.get(id(loop))
    if client is None:
        client = redis.asyncio.Redis.from_url(settings.REDIS_URL, socket_timeout=None)
        _async_clients[id(loop)] = client
    return client


async def last_id(thread_id):
    entries = await async_redis_client().xrevrange(stream_key(thread_id), count=1)
    return entries[0][0].decode() if entries else "0-0"


async def read(thread_id, after, block_ms=BLOCK_MS, count=500):
    """[(entry_id, json_text), ...] after `after`; [] when nothing arrived within block_ms."""
    result = await async_redis_client().xread({stream_key(thread_id): after}, block=block_ms, count=count)
    if not result:
        return []
    return [(entry_id.decode(), fields[b"e"].decode()) for entry_id, fields in result[0][1]]


async def range_from(thread_id, start):
    """Entries from `start` (inclusive) to now, for replaying an active run."""
    entries = await async_redis_client().xrange(stream_key(thread_id), min=start)
    return [(entry_id.decode(), fields[b"e"].decode()) for entry_id, fields in entries]


__all__ = ["EventStream", "EventType", "append", "encode", "read", "range_from", "last_id", "redis_client"]
