"""Redis leases a worker holds while it works: a key that lapses when the process dies.

One thread per process sets, renews and drops every lease the process holds; a holder only
queues what it wants. A thread of its own per lease, and the holder's own round trips to set and
drop the key, cost about 1 ms on the way from a decision to its tool's result. Celery's and
redis-py's locks renew on a timer thread of their own each, so neither is used here.

Setting the key a moment after the block began is safe: recovery looks only at calls claimed and
runs started more than a lease's length ago (execution.stuck_call_ids, recover_stuck_runs). A
key dropped a moment late belongs to a call or run that is no longer executing or running, which
recovery does not ask about.
"""

import logging
import os
import threading
import time
from contextlib import contextmanager

from django.conf import settings

from agui_project.redis_client import redis_client

log = logging.getLogger(__name__)


class _Keeper:
    def __init__(self):
        self._cond = threading.Condition()
        self._held = {}  # key -> [label, ttl ms, holders]
        self._queued = []  # (key, ttl ms to set it | None to drop it, label), in the order asked
        self._busy = False  # a batch is on its way to Redis
        self._renewed = time.monotonic()
        self._thread = None

    def add(self, key, label, ttl_ms):
        with self._cond:
            if not self._held:
                self._renewed = time.monotonic()  # the next renewal is due a third of a lease from now
            self._held.setdefault(key, [label, ttl_ms, 0])[2] += 1
            self._queued.append((key, ttl_ms, label))
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
                self._queued.append((key, None, entry[0]))
                self._cond.notify_all()

    def drain(self, timeout=10.0):
        """Wait until everything asked so far is in Redis; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queued or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _next_batch(self):
        """Under the lock: what is queued, else every held lease once its renewal is due."""
        while True:
            if self._queued:
                batch, self._queued = self._queued, []
                return batch
            if not self._held:
                self._cond.wait()
                continue
            # every third of the shortest lease: two renewals may fail before one lapses
            due = self._renewed + min(ttl for _, ttl, _ in self._held.values()) / 3000
            if time.monotonic() < due:
                self._cond.wait(due - time.monotonic())
                continue
            self._renewed = time.monotonic()
            return [(key, ttl, label) for key, (label, ttl, _) in self._held.items()]

    def _loop(self):
        while True:
            with self._cond:
                batch = self._next_batch()
                self._busy = True
            try:  # batches go one after another: a key dropped after a renewal stays dropped
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
