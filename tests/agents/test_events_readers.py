"""Stream readers at scale (issue 9, fan-out): many watchers of one thread share one XREAD, and
watchers of many threads in one process are not capped by redis-py's pool default (100)."""

import asyncio
import json
import uuid

from ag_ui.core import CustomEvent

from agents.runtime import events


def _thread():
    return f"readers-{uuid.uuid4()}"


async def test_watchers_of_one_thread_share_one_xread(monkeypatch):
    calls = []
    real = events._xread

    async def counting(*args):
        calls.append(args)
        return await real(*args)

    monkeypatch.setattr(events, "_xread", counting)
    thread_id = _thread()
    after = events.last_id_sync(thread_id)
    readers = [asyncio.create_task(events.read(thread_id, after, block_ms=3000)) for _ in range(300)]
    await asyncio.sleep(0.05)  # all of them are waiting
    await asyncio.to_thread(events.append, thread_id, CustomEvent(name="ping", value=1))
    results = await asyncio.wait_for(asyncio.gather(*readers), timeout=10)
    assert len(calls) == 1
    assert all(len(r) == 1 and '"name":"ping"' in r[0][1] for r in results)
    assert results[0] is results[-1]  # literally one decode for all


async def test_a_reader_leaving_does_not_cancel_the_others():
    thread_id = _thread()
    after = events.last_id_sync(thread_id)
    leaving = asyncio.create_task(events.read(thread_id, after, block_ms=3000))
    staying = asyncio.create_task(events.read(thread_id, after, block_ms=3000))
    await asyncio.sleep(0.05)
    leaving.cancel()
    await asyncio.to_thread(events.append, thread_id, CustomEvent(name="still-here", value=1))
    got = await asyncio.wait_for(staying, timeout=10)
    assert '"still-here"' in got[0][1]
    assert leaving.cancelled()


def _reads():
    """The reads in flight, every loop's."""
    return {k: v for reads in events._inflight_reads.values() for k, v in reads.items()}


async def test_last_reader_leaving_stops_the_shared_read_and_newcomers_start_fresh():
    thread_id = _thread()
    after = events.last_id_sync(thread_id)
    first = asyncio.create_task(events.read(thread_id, after, block_ms=3000))
    await asyncio.sleep(0.05)
    shared = next(v for k, v in _reads().items() if k[0] == thread_id)
    first.cancel()
    await asyncio.sleep(0.05)
    assert shared.task.cancelled()
    late = asyncio.create_task(events.read(thread_id, after, block_ms=3000))
    await asyncio.sleep(0.05)
    await asyncio.to_thread(events.append, thread_id, CustomEvent(name="fresh", value=1))
    assert '"fresh"' in (await asyncio.wait_for(late, timeout=10))[0][1]


async def _joined(thread_id, waiters):
    """Until `waiters` readers wait on the thread's shared read."""
    for _ in range(1000):
        shared = next((v for k, v in _reads().items() if k[0] == thread_id), None)
        if shared is not None and shared.waiters == waiters:
            return shared
        await asyncio.sleep(0.01)
    raise AssertionError(f"{waiters} readers never joined the read")


async def test_followers_get_each_batch_in_one_pass_then_the_next_on_one_read_between_them(monkeypatch):
    """follow(): each batch goes to every follower's deliver as the shared read gets it, before any
    reader's task wakes; the followers are then on the next read, one XREAD between them, with no
    task of theirs woken. One whose deliver says stop gets nothing more, a stopped one nothing, and
    once all are stopped the read they waited on is cancelled."""
    calls = []
    real = events._xread

    async def counting(*args):
        calls.append(args[1])
        return await real(*args)

    monkeypatch.setattr(events, "_xread", counting)
    thread_id = _thread()
    after = events.last_id_sync(thread_id)
    got = []

    def deliver(name, more=True):
        return lambda batch: got.append((name, [json.loads(p)["name"] for _, p in batch])) or more

    block = 10_000  # no empty read meanwhile: a read at each position, no more
    followers = [events.follow(thread_id, after, deliver(i), block_ms=block) for i in range(3)]
    quitter = events.follow(thread_id, after, deliver("quits", more=False), block_ms=block)
    stopped = events.follow(thread_id, after, deliver("stopped"), block_ms=block)
    stopped.stop()

    async def reader():
        await events.read(thread_id, after, block_ms=block)
        got.append(("woke", []))

    waking = asyncio.create_task(reader())
    await _joined(thread_id, 1)
    await asyncio.to_thread(events.append, thread_id, CustomEvent(name="ping", value=1))
    await asyncio.wait_for(waking, timeout=10)
    assert sorted(map(str, got[:4])) == sorted(map(str, [(0, ["ping"]), (1, ["ping"]), (2, ["ping"]), ("quits", ["ping"])]))
    assert got[4:] == [("woke", [])]
    assert quitter.ended.done() and quitter.ended.result() is None and not followers[0].ended.done()
    await asyncio.to_thread(events.append, thread_id, CustomEvent(name="pong", value=2))
    for _ in range(1000):  # delivered, and the followers' next read issued (on a busy machine, later)
        if len(got) == 8 and len(calls) >= 3:
            break
        await asyncio.sleep(0.01)
    assert sorted(map(str, got[5:])) == sorted(map(str, [(0, ["pong"]), (1, ["pong"]), (2, ["pong"])]))
    # one read at each position (the first the reader's too): before ping, after it, after pong
    assert len(calls) == 3 and calls[0] == after and len(set(calls)) == 3
    for follower in followers:
        follower.stop()
    assert not any(k[0] == thread_id for k in _reads())


async def test_watchers_of_many_threads_are_not_capped_at_the_pool_default():
    threads = [_thread() for _ in range(150)]  # past redis-py 8's default of 100 connections
    readers = [asyncio.create_task(events.read(t, "0-0", block_ms=5000)) for t in threads]
    await asyncio.sleep(0.2)
    assert not any(r.done() for r in readers), [r.exception() for r in readers if r.done()][:1]

    def append_all():
        for t in threads:
            events.append(t, CustomEvent(name="hello", value=t))

    await asyncio.to_thread(append_all)
    results = await asyncio.wait_for(asyncio.gather(*readers), timeout=15)
    assert [t in r[0][1] for t, r in zip(threads, results, strict=True)] == [True] * len(threads)


def test_readers_after_an_empty_read_block_again_instead_of_spinning():
    """Two readers whose shared read timed out with [] ask again at once: each new read must wait
    on Redis (a done read reused would return [] without yielding: a busy loop that starved
    Daphne's event loop). Run in its own thread and loop, so a regression fails instead of hanging."""
    import threading
    import time

    thread_id = _thread()
    after = events.last_id_sync(thread_id)
    rounds = []

    async def reader():
        for _ in range(3):
            rounds.append(await events.read(thread_id, after, block_ms=100))

    async def main():
        await asyncio.gather(reader(), reader())

    started = time.monotonic()
    worker = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "readers spun on a finished read"
    assert rounds == [[]] * 6
    assert time.monotonic() - started >= 0.3  # three real 100 ms waits, shared by both readers


def test_a_loop_is_never_handed_the_client_of_a_loop_gone_before_it():
    """Keyed by the loop's id, a loop made after another was gone (CPython reuses the address) got
    the dead loop's client: its pool's lock bound to that loop, a read failed "Lock ... is bound to
    a different event loop" (socket tests, now and then, after others had run loops of their own)."""
    async def client():
        return events.async_redis_client()

    made = [asyncio.run(client()) for _ in range(50)]  # each loop closed and dropped after
    assert len(set(map(id, made))) == 50  # the clients are kept here: their ids are their own
    assert sum(loop.is_closed() for loop in events._async_clients) <= 1  # the last's, dropped with the next
