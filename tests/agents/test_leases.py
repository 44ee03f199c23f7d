"""Leases (agents/runtime/leases.py): held while the block runs, renewed by one thread per process,
gone when the block ends, and never set again by a renewal that raced the end; a block shorter
than a sixth of a lease never touches Redis."""

import logging
import os
import threading
import time
import uuid

import pytest

from agents.runtime import leases
from agents.runtime.events import redis_client


def key():
    return f"agui:test:lease:{uuid.uuid4()}"


def lease_threads():
    return [t for t in threading.enumerate() if t.name.startswith("lease")]


def test_a_lease_outlives_its_length_while_held_and_goes_with_the_block(settings):
    settings.AGUI_TOOL_LEASE_SECONDS = 1
    client, k = redis_client(), key()
    with leases.hold(k, "test"):
        assert leases._keeper.drain(due=True)
        assert 0 < client.pttl(k) <= 1000
        entered, renewals, last = time.monotonic(), 0, client.pttl(k)
        while time.monotonic() - entered < 1.5:  # past the lease's own length: renewed every third of it
            now = client.pttl(k)
            assert now > 0, "the lease lapsed while it was held"
            renewals += now > last
            last = now
            time.sleep(0.02)
        assert renewals >= 2
    assert leases._keeper.drain()
    assert not client.exists(k)


def test_many_leases_share_one_thread(settings):
    settings.AGUI_TOOL_LEASE_SECONDS = 30
    client, keys = redis_client(), [key() for _ in range(5)]
    holders = [leases.hold(k, f"test {i}") for i, k in enumerate(keys)]
    for h in holders:
        h.__enter__()
    try:
        assert leases._keeper.drain(due=True)
        assert all(client.exists(k) for k in keys)
        assert len(lease_threads()) == 1
    finally:
        for h in holders:
            h.__exit__(None, None, None)
    assert leases._keeper.drain()
    assert not any(client.exists(k) for k in keys)
    assert len(lease_threads()) == 1  # it waits for the next lease: no thread per lease


def test_a_renewal_does_not_bring_back_a_lease_that_ended(settings):
    settings.AGUI_TOOL_LEASE_SECONDS = 1
    client, k, other = redis_client(), key(), key()
    with leases.hold(other, "still held"):
        with leases.hold(k, "ended"):
            assert leases._keeper.drain(due=True)
            assert client.exists(k)
        # the renewals while `other` is held (every third of a second) leave `k` dropped
        renewed_since = client.pttl(other)
        deadline = time.monotonic() + 10
        while client.pttl(other) <= renewed_since:
            assert time.monotonic() < deadline, "no renewal came"
            renewed_since = min(renewed_since, client.pttl(other))
            time.sleep(0.02)
        assert not client.exists(k)
        assert client.exists(other)


def test_the_same_key_held_twice_stays_until_both_let_go(settings):
    settings.AGUI_TOOL_LEASE_SECONDS = 30
    client, k = redis_client(), key()
    with leases.hold(k, "outer"):
        with leases.hold(k, "inner"):
            pass
        assert leases._keeper.drain(due=True)
        assert client.exists(k)
    assert leases._keeper.drain()
    assert not client.exists(k)


def test_work_goes_on_when_redis_refuses_the_lease(settings, caplog, monkeypatch):
    """The lease thread logs and tries again at the next renewal; the holder never waits or fails."""
    settings.AGUI_TOOL_LEASE_SECONDS = 30

    class Down:
        def pipeline(self, **kwargs):
            raise ConnectionError("Redis is down")

    done = []
    with caplog.at_level(logging.WARNING, logger="agents.runtime.leases"):
        monkeypatch.setattr(leases, "redis_client", lambda: Down())
        with leases.hold(key(), "tool call x"):
            done.append(True)
            assert leases._keeper.drain(due=True)  # its first write, whenever it comes, is refused
    assert done == [True]
    assert "leases of tool call x not written: Redis is down" in caplog.text


def test_a_lease_is_first_written_a_sixth_of_its_length_after_the_block_began(settings):
    settings.AGUI_TOOL_LEASE_SECONDS = 1
    client, k = redis_client(), key()
    with leases.hold(k, "test"):
        began = time.monotonic()
        deadline = began + 10
        while not client.exists(k):
            assert time.monotonic() < deadline, "the lease was never written"
            time.sleep(0.01)
        assert time.monotonic() - began >= 1 / 6
        assert 0 < client.pttl(k) <= 1000
    assert leases._keeper.drain()
    assert not client.exists(k)


def test_a_block_shorter_than_a_sixth_of_its_lease_never_touches_redis(settings, monkeypatch):
    """No SET and no DEL: a quick tool call or run costs the lease thread no round trip."""
    settings.AGUI_TOOL_LEASE_SECONDS = 30
    sent = []

    class Recording:
        def pipeline(self, **kwargs):
            sent.append(kwargs)
            return redis_client().pipeline(**kwargs)

    monkeypatch.setattr(leases, "redis_client", lambda: Recording())
    client, k = redis_client(), key()
    with leases.hold(k, "quick"), leases.hold(key(), "quicker"):
        assert not client.exists(k)
    assert leases._keeper.drain()
    assert not leases._keeper._held and sent == []
    with leases.hold(k, "held long enough"):  # the same keeper writes the one that is due
        assert leases._keeper.drain(due=True)
        assert client.exists(k) and len(sent) == 1
    assert leases._keeper.drain()
    assert not client.exists(k) and len(sent) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_holds_none_of_its_parents_leases(settings):
    settings.AGUI_TOOL_LEASE_SECONDS = 30
    with leases.hold(key(), "parent's"):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: Celery's prefork pool forks its children like this
            os.close(read)
            os.write(write, b"%d" % len(leases._keeper._held))
            os._exit(0)
        os.close(write)
        held_in_child = os.read(read, 16)
        os.close(read)
        os.waitpid(pid, 0)
    assert held_in_child == b"0"
