"""Redis leases a worker holds while it works: a key that lapses when the process dies.

One thread per process sets, renews and drops every lease the process holds; a holder only
queues what it wants. A thread of its own per lease, and the holder's own round trips to set and
drop the key, cost about 1 ms on the way from a decision to its tool's result. Celery's and
redis-py's locks renew on a timer thread of their own each, so neither is used here.

A lease is first written a sixth of its length after the block began, then every third of it:
recovery looks only at calls claimed and runs started more than a lease's length ago
(execution.stuck_call_ids, recover_stuck_runs), and by then a live holder has written its key
three times (at 1/6, 1/2 and 5/6 of a lease), so two writes may fail before recovery could take it
for dead, as when the key was written at once. A block shorter than that (most tool calls, most
runs) never touches Redis: no SET, no DEL, and no wake-up of this thread in the middle of the
work (the run's own thread and its event writer had to share the interpreter with it just as a
tool's result was on its way). A key dropped a moment late belongs to a call or run that is no
longer executing or running, which recovery does not ask about. A Redis restart that empties it
drops live holders' keys until their next write: recovery then waits a lease length
(execution._lapsed).
"""

import logging
import os
import threading
import time
from contextlib import contextmanager

from django.conf import settings

from agui_project.redis_client import redis_client

log = logging.getLogger(__name__)

FIRST_WRITE = 1 / 6  # of a lease's length, after the block began
RENEW_EVERY = 1 / 3  # of a lease's length, after the last write
EARLY = 1 / 12  # a key due this soon goes with a batch being sent (one round trip, not two)


class _Keeper:
    def __init__(self):
        self._cond = threading.Condition()
        self._held = {}  # key -> [label, ttl ms, holders, monotonic time its next write is due, written]
        self._queued = []  # (key, None, label): drops of written keys, in the order asked
        self._busy = False  # a batch is on its way to Redis
        self._thread = None

    def add(self, key, label, ttl_ms):
        with self._cond:
            entry = self._held.get(key)
            if entry is None:
                self._held[key] = [label, ttl_ms, 1, time.monotonic() + ttl_ms * FIRST_WRITE / 1000, False]
            else:
                entry[2] += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="leases", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def remove(self, key):
        with self._cond:
            entry = self._held[key]
            entry[2] -= 1
            if not entry[2]:
                del self._held[key]
                if entry[4]:  # never written: nothing in Redis to drop
                    self._queued.append((key, None, entry[0]))
                    self._cond.notify_all()

    def drain(self, timeout=10.0, due=False):
        """Wait until every drop asked so far is in Redis, and with `due` every held lease
        written once (as if its first write were due now); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if due:
                for entry in self._held.values():
                    if not entry[4]:
                        entry[3] = 0.0
                self._cond.notify_all()
            while self._queued or self._busy or (due and not all(e[4] for e in self._held.values())):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _next_batch(self):
        """Under the lock: the queued drops, else every held lease whose write is due (or nearly)."""
        while True:
            if self._queued:
                batch, self._queued = self._queued, []
                return batch
            if not self._held:
                self._cond.wait()
                continue
            now = time.monotonic()
            first_due = min(entry[3] for entry in self._held.values())
            if now < first_due:
                self._cond.wait(first_due - now)
                continue
            batch = []
            for key, entry in self._held.items():
                label, ttl_ms, _, due_at, _ = entry
                if due_at <= now + ttl_ms * EARLY / 1000:
                    entry[3], entry[4] = now + ttl_ms * RENEW_EVERY / 1000, True
                    batch.append((key, ttl_ms, label))
            return batch

    def _loop(self):
        while True:
            with self._cond:
                batch = self._next_batch()
                self._busy = True
            try:  # batches go one after another: a key dropped after a write stays dropped
                pipe = redis_client().pipeline(transaction=False)
                for key, ttl_ms, _ in batch:
                    if ttl_ms is None:
                        pipe.delete(key)
                    else:
                        pipe.set(key, "1", px=ttl_ms)
                pipe.execute()
            except Exception as exc:  # never the end of this thread: the next renewal tries again
                labels = list(dict.fromkeys(label for _, _, label in batch))
                log.warning("leases of %s%s not written: %s", ", ".join(labels[:5]),
                            f" and {len(labels) - 5} more" if len(labels) > 5 else "", exc)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def after_fork(self):
        """A forked child (Celery's prefork pool) holds none of its parent's leases or threads."""
        self.__init__()


_keeper = _Keeper()
os.register_at_fork(after_in_child=_keeper.after_fork)


@contextmanager
def hold(key, label):
    """Hold a Redis lease while the block runs. Never fails or waits for the work: the process's
    lease thread sets, renews and drops the key."""
    _keeper.add(key, label, int(max(1.0, float(settings.AGUI_TOOL_LEASE_SECONDS)) * 1000))
    try:
        yield
    finally:
        _keeper.remove(key)
