"""Recovery's sweep (agents.tasks.recover_stuck_calls, sent by the beat every 10 s) run twice at once:
two beats (README "Running several processes" warns against them, and a deploy that starts one per
host has them), or a sweep slower than the beat's period (Redis coming back, when there is most to
do). Each part read what it had to do before either wrote that it was done: a run left unannounced
was announced by both, and the thread's stream got two RUN_STARTED of one run (an AG-UI client throws
on the second); an end Redis could not take was published twice. One sweep runs at a time now."""

import pytest

from agents import dispatch, services, tasks
from agents.models import Run
from agents.runtime import execution
from agents.runtime.events import redis_client
from tests.conftest import stream_events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def unannounced(demo, settings, monkeypatch):
    """A queued run whose announce never happened (Redis was down at its commit), due for the sweep."""
    settings.AGUI_ANNOUNCE_RETRY_SECONDS = 0
    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: None)  # no worker here
    thread = services.create_thread(demo["alice"], "banking")
    return Run.objects.create(thread=thread, status=Run.Status.QUEUED)


def test_two_sweeps_at_once_announce_a_run_once(unannounced, monkeypatch):
    real, others = services.announce, []

    def announce(run_id, *args, **kwargs):
        if not others:  # the other beat's sweep runs now, between this one's read and its announce
            others.append(run_id)
            tasks.recover_stuck_calls()
        return real(run_id, *args, **kwargs)

    monkeypatch.setattr(services, "announce", announce)
    tasks.recover_stuck_calls()
    assert others == [unannounced.pk]
    started = [e["runId"] for e in stream_events(unannounced.thread_id) if e["type"] == "RUN_STARTED"]
    assert started == [unannounced.pk]


def test_two_sweeps_at_once_publish_an_undelivered_end_once(demo, monkeypatch):
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.FAILED,
                             undelivered_end='{"type":"RUN_ERROR","message":"x","code":"stream_unavailable"}')
    real, others = execution.events.append_encoded, []

    def append(thread_id, *payloads):
        if not others:  # the other beat's sweep, between this one's read and its write
            others.append(thread_id)
            tasks.recover_stuck_calls()
        return real(thread_id, *payloads)

    monkeypatch.setattr(execution.events, "append_encoded", append)
    tasks.recover_stuck_calls()
    assert others == [thread.pk]
    assert [e["type"] for e in stream_events(thread.pk)] == ["RUN_ERROR"]
    assert Run.objects.get(pk=run.pk).undelivered_end == ""


def test_a_sweep_lost_with_its_worker_holds_the_others_back_for_half_a_minute_at_most(unannounced):
    redis_client().set(execution.SWEEP_KEY, "a worker killed mid-sweep", px=execution.SWEEP_HOLD_MS)
    tasks.recover_stuck_calls()
    assert Run.objects.get(pk=unannounced.pk).stream_id == ""  # that sweep's turn, not this one's
    assert 0 < redis_client().pttl(execution.SWEEP_KEY) <= 30_000
    redis_client().delete(execution.SWEEP_KEY)  # its half minute is over
    tasks.recover_stuck_calls()
    assert Run.objects.get(pk=unannounced.pk).stream_id
    assert not redis_client().exists(execution.SWEEP_KEY)  # a sweep that ended lets the next one in
