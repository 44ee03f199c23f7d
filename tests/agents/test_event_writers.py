"""The threads that write runs' events (agents/runtime/events.py _Writers): kept for the next run,
never shared by two runs at once, and none inherited by a forked child."""

import os
import threading
import uuid

import pytest
from ag_ui.core import CustomEvent

from agents.runtime import events
from agents.runtime.events import EventStream, redis_client


def writer_threads():
    return {t for t in threading.enumerate() if t.name == "events"}


def names_in(thread_id):
    return [e.decode() for _id, fields in redis_client().xrange(events.stream_key(thread_id))
            for e in [fields[b"e"]]]


def write(thread_id, *names):
    stream = EventStream(thread_id)
    for name in names:
        stream.emit(CustomEvent(name=name, value=None))
    return stream


def flushed_within(stream, seconds=5):
    """flush() waits for the stream's writer: done in time only if the stream has one of its own."""
    done = threading.Event()
    threading.Thread(target=lambda: (stream.flush(), done.set()), daemon=True).start()
    return done.wait(seconds)


def test_a_writer_is_kept_for_the_next_run():
    first, second = f"t-{uuid.uuid4()}", f"t-{uuid.uuid4()}"
    write(first, "a", "b").close()
    before = writer_threads()
    assert before, "no writer thread is kept after a run"
    for _ in range(5):
        write(second, "c").close()
    assert writer_threads() == before  # no new thread per run
    assert ['"name":"a"' in e for e in names_in(first)] == [True, False]
    assert len(names_in(second)) == 5


def test_runs_at_the_same_time_each_have_a_writer_of_their_own():
    ids = [f"t-{uuid.uuid4()}" for _ in range(3)]
    streams = [write(thread_id, "x") for thread_id in ids]  # none closed yet: each writer stays busy
    try:
        assert all(flushed_within(s) for s in streams), "a run's events waited for another run's writer"
        assert [len(names_in(thread_id)) for thread_id in ids] == [1, 1, 1]
    finally:
        for s in streams:
            s.close()


def test_no_more_than_the_idle_limit_are_kept(monkeypatch):
    monkeypatch.setattr(events, "IDLE_WRITERS", 1)
    streams = [write(f"t-{uuid.uuid4()}", "x") for _ in range(3)]
    for s in streams:
        s.close()
    assert len(events._writers._idle) <= 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_writers():
    write(f"t-{uuid.uuid4()}", "parent").close()
    assert events._writers._idle, "the parent keeps a writer"
    thread_id = f"t-{uuid.uuid4()}"
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: Celery's prefork pool forks its children like this
        os.close(read)
        inherited = len(events._writers._idle)
        stream = write(thread_id, "child")
        ok = flushed_within(stream)
        stream.close()
        os.write(write_end, b"%d %d" % (inherited, ok))
        os._exit(0)
    os.close(write_end)
    answer = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"0 1"  # no writer inherited, and its own wrote the child's events
    assert len(names_in(thread_id)) == 1
