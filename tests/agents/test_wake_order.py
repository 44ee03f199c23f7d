"""What a decision does after its commit, in the order that keeps the paused run's wait short:
the continuation is made and handed to a worker first; the inbox's notices and the webhooks'
reads follow (README "Performance")."""

import json
import threading

import kombu.exceptions
import pytest

from agents import dispatch, services
from agents.models import Run
from agents.runtime import events
from agents.runtime.events import redis_client
from agui_project import broker
from agui_project.celery import app as celery_app
from approvals import notify
from tests.conftest import TEST_QUEUE, stream_events
from tests.helpers import paused_transfer


@pytest.mark.django_db(transaction=True)
def test_the_paused_run_is_continued_before_the_inbox_hears_of_the_decision(demo, api, monkeypatch):
    run, req = paused_transfer(demo["alice"], "call-w")
    handed, heard = [], []
    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: handed.append(run_id))
    real_notice = notify.inbox_notice

    def notice(kind, request):
        heard.append((kind, list(handed)))
        return real_notice(kind, request)

    monkeypatch.setattr(notify, "inbox_notice", notice)
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200
    continuation = Run.objects.get(parent_run=run)
    assert heard == [("decided", [continuation.pk])]  # the worker had the run when the inbox was told
    assert continuation.stream_id  # where its events begin, written after the hand-over


def refused(run_id):
    raise kombu.exceptions.OperationalError("broker down")


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_task_a_broker_elsewhere_refused_keeps_its_stream_id(demo, monkeypatch):
    """With the broker on another Redis than the streams, RUN_STARTED is written first: the beat then
    sends the task again (execution.requeue_lost_runs) instead of announcing the run a second time."""
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.QUEUED)
    monkeypatch.setattr(broker, "shares_redis", lambda conf: False)
    monkeypatch.setattr(dispatch, "enqueue_run", refused)
    dispatch.announce_after_commit(run.pk)
    assert Run.objects.get(pk=run.pk).stream_id


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_task_the_streams_redis_refused_is_announced_whole_by_the_beat(demo, settings, monkeypatch):
    """RUN_STARTED and the task go together (one MULTI): refused, neither was written, and the beat
    announces the run once (services.announce_unannounced), with one RUN_STARTED."""
    assert broker.shares_redis(celery_app.conf)  # the tests' broker is REDIS_URL, through agui_project.broker
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.QUEUED)
    monkeypatch.setattr(dispatch, "enqueue_run", refused)
    dispatch.announce_after_commit(run.pk)
    assert Run.objects.get(pk=run.pk).stream_id == ""
    assert not [e for e in stream_events(thread.pk) if e["type"] == "RUN_STARTED"]
    handed = []
    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: handed.append(run_id))
    settings.AGUI_ANNOUNCE_RETRY_SECONDS = 0
    assert services.announce_unannounced() == [run.pk]
    assert handed == [run.pk] and Run.objects.get(pk=run.pk).stream_id
    assert [e["runId"] for e in stream_events(thread.pk) if e["type"] == "RUN_STARTED"] == [run.pk]


@pytest.mark.django_db(transaction=True)
def test_a_woken_run_and_its_start_reach_redis_in_one_round_trip_start_first(demo):
    """A decision's continuation: its notices and RUN_STARTED, then its task, in one MULTI/EXEC on the
    broker's connection (no XADD of its own before the publish, which the worker would wait for)."""
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.QUEUED)
    key = events.stream_key(thread.pk)
    seen, done = [], threading.Event()

    with redis_client().monitor() as monitor:  # MONITOR is on once this returns
        def watch():
            while not done.is_set():
                found = monitor.next_command()
                command = found["command"]
                name = command.split(" ", 1)[0].upper() + (" ours" if key in command or run.pk in command else "")
                seen.append((found["client_port"], name))
                if name == "EXEC" and any(n == "LPUSH ours" for _p, n in seen):
                    done.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        dispatch.announce_after_commit(run.pk)
        assert done.wait(10), seen
    port = next(p for p, n in seen if n == "XADD ours")
    commands = [n for p, n in seen if p == port]  # the connection that wrote the stream
    at = commands.index("XADD ours")
    assert commands[at - 1:at + 4] == ["MULTI", "XADD ours", "EXPIRE ours", "LPUSH ours", "EXEC"], commands
    assert [n for _p, n in seen if n == "XADD ours"] == ["XADD ours"]  # no write of its own before or after
    started = [e for e in stream_events(thread.pk) if e["type"] == "RUN_STARTED"]
    assert [e["runId"] for e in started] == [run.pk]
    assert Run.objects.get(pk=run.pk).stream_id
    queued = [json.loads(m) for m in redis_client().lrange(TEST_QUEUE, 0, -1)]
    assert any(m["headers"]["task"] == dispatch.RUN_AGENT and run.pk in m["headers"]["argsrepr"] for m in queued)


@pytest.mark.django_db(transaction=True)
def test_a_decision_writes_its_chat_notice_with_the_continuations_start(demo, api, monkeypatch):
    """One round trip to Redis before the worker is woken, not two: the chat's approval_response,
    then the continuation's RUN_STARTED, in that order."""
    from agents.runtime import events

    run, req = paused_transfer(demo["alice"], "call-n")
    writes = []
    real_append = events.append_encoded

    def append(thread_id, *payloads):
        writes.append([json.loads(p)["type"] + (":" + json.loads(p).get("name", "")).rstrip(":") for p in payloads])
        return real_append(thread_id, *payloads)

    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: None)
    monkeypatch.setattr(events, "append_encoded", append)
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200
    assert Run.objects.filter(parent_run=run).exists()
    assert writes == [["CUSTOM:approval_response", "RUN_STARTED"]]
    stream = [e["type"] for e in stream_events(run.thread_id)]
    assert stream[-2:] == ["CUSTOM", "RUN_STARTED"]
