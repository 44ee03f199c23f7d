"""The beat sends a sweep only once the last one it sent was picked up (agui_project/beat.py): while
every worker was down its sweeps piled up in the broker, about 4,700 an hour, each run in turn when a
worker came back."""

from types import SimpleNamespace

import pytest
from celery import signals
from celery.beat import PersistentScheduler, ScheduleEntry

from agui_project import beat
from agui_project.celery import app
from agui_project.redis_client import redis_client

TASK = "approvals.tasks.deadlines_due"


@pytest.fixture
def scheduler(tmp_path, monkeypatch):
    """The project's scheduler, what it hands to Celery's send recorded instead of published."""
    sent = []
    monkeypatch.setattr(PersistentScheduler, "apply_async",
                        lambda self, entry, producer=None, advance=True, **kw: sent.append(entry.task) or entry.task)
    redis_client().delete(beat.pending_key(TASK))
    yield beat.Scheduler(app=app, schedule_filename=str(tmp_path / "schedule"), lazy=True), sent
    redis_client().delete(beat.pending_key(TASK))


def entry():
    return ScheduleEntry(name="approval-deadlines", task=TASK, schedule=2.0, app=app)


def picked_up(name=TASK):
    """What a worker's Celery sends as it starts a task of that name."""
    signals.task_prerun.send(sender=None, task_id="t", task=SimpleNamespace(name=name), args=(), kwargs={})


def test_a_sweep_waiting_for_a_worker_holds_the_next_ones_back(scheduler):
    sched, sent = scheduler
    for _tick in range(5):  # every worker down: one sweep waits, the others are not sent
        sched.apply_async(entry())
    assert sent == [TASK]
    assert 0 < redis_client().ttl(beat.pending_key(TASK)) <= beat.PENDING_SECONDS  # a lost message pauses it no longer

    picked_up()  # a worker starts it
    sched.apply_async(entry())
    assert sent == [TASK, TASK]


def test_only_the_beats_own_tasks_free_a_send(scheduler):
    sched, sent = scheduler
    sched.apply_async(entry())
    picked_up("agents.tasks.run_agent")
    sched.apply_async(entry())
    assert sent == [TASK]


def test_a_send_the_broker_refused_leaves_nothing_waiting(scheduler, monkeypatch):
    sched, sent = scheduler

    def refused(self, entry, producer=None, advance=True, **kw):
        raise ConnectionError("broker away")
    monkeypatch.setattr(PersistentScheduler, "apply_async", refused)
    with pytest.raises(ConnectionError):
        sched.apply_async(entry())
    assert not redis_client().exists(beat.pending_key(TASK))  # the next tick tries again


def test_the_beat_runs_this_scheduler():
    assert app.conf.beat_scheduler == "agui_project.beat:Scheduler"


@pytest.mark.parametrize("starting", [signals.beat_init, signals.worker_ready])
def test_a_worker_or_the_beat_starting_drops_the_marks_of_sweeps_lost_with_the_last_one(scheduler, starting):
    """A sweep a stopped worker had taken off the queue never starts, and its mark held the next ones
    back for five minutes after a deploy or a crash (the requests' reminders and escalations with them)."""
    sched, sent = scheduler
    sched.apply_async(entry())  # taken by a worker that is then killed: never picked up
    sched.apply_async(entry())
    assert sent == [TASK]
    starting.send(sender=None)
    assert not redis_client().exists(beat.pending_key(TASK))
    sched.apply_async(entry())
    assert sent == [TASK, TASK]
