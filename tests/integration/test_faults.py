"""Redis restarted in the middle of a run: the run rides it out and finishes, never silently,
and the worker lives on to take the next run.

A private redis-server on a fixed port (so it can come back on the same address), a real
subprocess Celery worker using it as broker and event stream, the fake model streaming slowly.
"""

import json
import subprocess
import time

import pytest
import redis
from celery import Celery
from kombu import pools as kombu_pools

from agents.models import Message, Run, ToolCall
from agents.services import add_message, create_thread
from approvals.models import ApprovalRequest
from scripts import devstack
from tests.conftest import TEST_QUEUE, stream_events
from tests.integration.test_recovery import Worker, assert_transferred_once, pause_transfer, wait_until

OUTAGE_SECONDS = 3.0
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


class PrivateRedis:
    def __init__(self, tmp_path):
        self.port, self.dir = devstack.free_port(), tmp_path
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [devstack.redis_server_binary(), "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: devstack.redis_ping("127.0.0.1", self.port), timeout=10, what="redis to answer")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def private_redis(tmp_path):
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def on_private_redis(private_redis, settings, monkeypatch):
    """This process (the web side: decisions, announces) uses the private Redis for its event stream
    and as its Celery broker, and gives up on it quickly (one retry) while it is down."""
    from agui_project import redis_client
    from agui_project.celery import app

    settings.REDIS_URL, settings.AGUI_REDIS_RETRIES = private_redis.url, 1
    monkeypatch.setattr(redis_client, "_client", None)

    def broker(url):
        # Celery caches its broker connection pool (NOTES.md trap 4), and kombu keeps a process-wide
        # registry of connection and producer pools by broker: closing only the app's pool left
        # that registry handing later tests a closed pool ("Acquire on closed pool"). Drop all.
        kombu_pools.reset()
        app.conf.broker_url, app._pool, app.amqp._producer_pool = url, None, None

    saved = app.conf.broker_url
    app.set_current()  # shared tasks (run_agent.delay) go through Celery's current app
    broker(private_redis.url)
    yield private_redis
    broker(saved)


def send_run(private_redis, run_id):
    """The run's task through the private Redis, by an app of its own that never becomes Celery's
    current app (shared tasks such as run_agent.delay in later tests would follow it there)."""
    Celery(broker=private_redis.url, set_as_current=False).send_task("agents.tasks.run_agent", args=[run_id],
                                                                     queue=TEST_QUEUE)


def stream(client, thread_id):
    return [json.loads(f[b"e"]) for _id, f in client.xrange(f"agui:thread:{thread_id}")]


def start_streaming(demo, fake_llm, private_redis, worker, words):
    """A run whose model streams `words` words slowly, handed to the worker through the private
    Redis; returns (thread, run, client of that Redis) once text is on the stream."""
    fake_llm.push({"text": " ".join(f"w{i}" for i in range(words)), "delay": 0.05})
    thread = create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread)
    add_message(thread, "user", "a long story please", run=run)
    send_run(private_redis, run.pk)
    client = redis.Redis.from_url(private_redis.url)
    wait_until(lambda: any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in stream(client, thread.pk)),
               timeout=60, what="the run to stream", worker=worker)
    return thread, run, client


def test_redis_restart_mid_run_the_run_finishes(demo, fake_llm, private_redis, tmp_path, settings):
    settings.REDIS_URL = private_redis.url  # Worker() hands the worker this Redis as broker and stream
    worker = Worker(tmp_path, "worker", fake_llm)
    try:
        thread, run, client = start_streaming(demo, fake_llm, private_redis, worker, words=120)

        private_redis.stop()  # the restart: all it held is gone, and clients see refused connections
        time.sleep(OUTAGE_SECONDS)  # how long Redis stays down (the fault itself, not a wait for something)
        private_redis.start()

        wait_until(lambda: Run.objects.get(pk=run.pk).status not in ("queued", "running"), timeout=60,
                   what="the run to end", worker=worker)
        run.refresh_from_db()
        assert run.status == "succeeded", (run.status, run.error, worker.output()[-2000:])
        answer = Message.objects.get(thread=thread, role="assistant").content
        assert answer.split() == [f"w{i}" for i in range(120)]  # nothing lost from the stored answer
        events = stream(client, thread.pk)
        assert events and events[-1]["type"] == "RUN_FINISHED"  # clients reading the new stream see the end
    finally:
        worker.stop()


def run_to_the_end(thread, private_redis, worker):
    """One more run on the thread through the worker; returns it once it ended (or the worker died)."""
    run = Run.objects.create(thread=thread)
    add_message(thread, "user", "and now?", run=run)
    send_run(private_redis, run.pk)
    wait_until(lambda: worker.proc.poll() is not None or Run.objects.get(pk=run.pk).status not in ("queued", "running"),
               timeout=60, what="the next run to end", worker=worker)
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("pool", ["threads", "prefork"])  # `make run` uses prefork; solo never met the bug
def test_the_worker_lives_through_a_redis_restart_mid_task_and_takes_the_next_run(pool, demo, fake_llm, private_redis,
                                                                                  tmp_path, settings):
    """Celery 5.7 + kombu 5.7 killed the worker here ("Unrecoverable error: AttributeError("'NoneType'
    object has no attribute 'hostname'")"), once while reconnecting and once at the late ack of the
    task that ran through the outage (agui_project/broker.py)."""
    settings.REDIS_URL = private_redis.url
    worker = Worker(tmp_path, "worker", fake_llm, pool=pool)
    try:
        thread, run, client = start_streaming(demo, fake_llm, private_redis, worker, words=80)
        private_redis.stop()
        time.sleep(OUTAGE_SECONDS)  # how long Redis stays down (the fault itself, not a wait for something)
        private_redis.start()
        wait_until(lambda: Run.objects.get(pk=run.pk).status not in ("queued", "running"), timeout=60,
                   what="the run to end", worker=worker)
        assert Run.objects.get(pk=run.pk).status == "succeeded", worker.output()[-3000:]

        fake_llm.push({"text": "Still here."})
        after = run_to_the_end(thread, private_redis, worker)
        assert worker.proc.poll() is None, worker.output()[-3000:]
        assert after.status == "succeeded", (after.status, after.error, worker.output()[-3000:])
        assert Message.objects.filter(thread=thread, role="assistant", content="Still here.").exists()
        assert stream(client, thread.pk)[-1]["type"] == "RUN_FINISHED"
        assert "Unrecoverable error" not in worker.output()
    finally:
        worker.stop()


def test_redis_down_longer_than_the_retries_fails_the_run_loudly(demo, fake_llm, private_redis, tmp_path, settings,
                                                                 monkeypatch):
    """Redis stays away past the writer's retries: the run stops as failed (stream_unavailable),
    keeps its RUN_ERROR, and the beat publishes it once Redis is back; a new run then works."""
    from agents.runtime import execution
    from agui_project import redis_client

    settings.REDIS_URL, settings.AGUI_REDIS_RETRIES = private_redis.url, 1
    monkeypatch.setattr(redis_client, "_client", None)  # this process's writer client follows the private Redis
    worker = Worker(tmp_path, "worker", fake_llm, AGUI_REDIS_RETRIES="1")  # gives up within ~0.1 s
    try:
        thread, run, client = start_streaming(demo, fake_llm, private_redis, worker, words=200)

        private_redis.stop()
        # the run is marked failed first, then its RUN_ERROR (which Redis cannot take) is kept
        wait_until(lambda: Run.objects.filter(pk=run.pk, status="failed").exclude(undelivered_end="").exists(),
                   timeout=60, what="the run to give up on Redis", worker=worker)
        run.refresh_from_db()
        assert run.error_code == "stream_unavailable" and "Retry" in run.error, (run.error_code, run.error)
        kept = json.loads(run.undelivered_end)
        assert kept["type"] == "RUN_ERROR" and kept["code"] == "stream_unavailable"
        with pytest.raises(redis.ConnectionError):  # the beat cannot publish it while Redis is down either
            execution.publish_undelivered_ends()
        assert Run.objects.get(pk=run.pk).undelivered_end == run.undelivered_end

        private_redis.start()  # a restart: the stream and everything in it are gone
        assert stream(client, thread.pk) == []
        assert execution.publish_undelivered_ends() == [run.pk]  # the beat task's body
        assert execution.publish_undelivered_ends() == []  # once
        told = stream(client, thread.pk)
        assert [(e["type"], e.get("code")) for e in told] == [("RUN_ERROR", "stream_unavailable")]
        assert Run.objects.get(pk=run.pk).undelivered_end == ""

        # the worker came through the outage: retrying (a new run on the same history) works
        fake_llm.push({"text": "Back again."})
        retry = Run.objects.create(thread=thread)
        send_run(private_redis, retry.pk)
        wait_until(lambda: Run.objects.get(pk=retry.pk).status not in ("queued", "running"), timeout=60,
                   what="the retry to end", worker=worker)
        assert Run.objects.get(pk=retry.pk).status == "succeeded", worker.output()[-2000:]
        assert stream(client, thread.pk)[-1]["type"] == "RUN_FINISHED"
    finally:
        worker.stop()


def test_a_decision_while_redis_is_down_is_committed_and_answered_and_continues_once_redis_is_back(
        demo, api, fake_llm, on_private_redis, tmp_path, settings):
    """Before: the decision committed, then announcing its continuation raised in the on-commit
    callback, and the reviewer got a 500 that said nothing was done while the decision stood."""
    from agents import tasks

    worker = Worker(tmp_path, "worker", fake_llm, pool="threads")  # idle through the outage
    try:
        thread, run, req = pause_transfer(demo, worker)

        on_private_redis.stop()
        response = api("finn").post(f"/api/approvals/{req.pk}/decide/",
                                    {"decision": "approve", "arguments": {**req.arguments, "amount": 450}}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["status"] == "modified"
        req.refresh_from_db()
        assert (req.status, req.final_arguments["amount"]) == ("modified", 450)
        assert ToolCall.objects.get(approval_id=req.pk).status == "approved"
        continuation = Run.objects.get(parent_run=run)
        assert (continuation.status, continuation.stream_id) == ("queued", "")  # waits for Redis, not lost

        on_private_redis.start()  # back, empty
        settings.AGUI_ANNOUNCE_RETRY_SECONDS = 0  # the beat's wait for a slow announce, here none
        tasks.recover_stuck_calls()  # the beat task's body (every 10 s)
        continuation = assert_transferred_once(thread, run, req, demo["finn"], "450.00")
        started = [e for e in stream_events(thread.pk) if e["type"] == "RUN_STARTED"]
        assert [(e["runId"], e.get("parentRunId")) for e in started] == [(continuation.pk, run.pk)]
        assert Run.objects.get(pk=continuation.pk).status == "succeeded"
        assert ApprovalRequest.objects.get(pk=req.pk).status == "modified"
        assert worker.proc.poll() is None, worker.output()[-3000:]
    finally:
        worker.stop()


def test_a_message_sent_while_redis_is_down_is_accepted_and_runs_once_redis_is_back(
        demo, api, fake_llm, on_private_redis, tmp_path, settings):
    """Before: the message and its queued run committed, then the on-commit announce raised and the
    user got a 500 for a message that stood."""
    from agents import tasks

    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    on_private_redis.stop()
    response = alice.post(f"/api/threads/{thread}/messages/", {"content": "hello"}, format="json")
    assert response.status_code == 202, response.content
    run = Run.objects.get(pk=response.json()["run_id"])
    assert (run.status, run.stream_id) == ("queued", "")
    assert Message.objects.filter(thread_id=thread, role="user", content="hello").exists()

    on_private_redis.start()
    settings.AGUI_ANNOUNCE_RETRY_SECONDS = 0
    worker = Worker(tmp_path, "worker", fake_llm, pool="threads")
    try:
        tasks.recover_stuck_calls()  # the beat announces it
        wait_until(lambda: Run.objects.get(pk=run.pk).status == "succeeded", timeout=30, what="the run",
                   worker=worker)
        started = [e["runId"] for e in stream_events(thread) if e["type"] == "RUN_STARTED"]
        assert started == [run.pk]
    finally:
        worker.stop()


def test_an_inbox_decision_and_a_near_deadline_while_redis_is_down_stand_and_are_answered(
        demo, login, on_private_redis, settings):
    """Before: the held decision (or the request) committed, then publishing its countdown task
    raised in the on-commit callback: the reviewer got a 500 for a decision that stood."""
    from approvals import services as approval_services
    from approvals.models import HeldDecision
    from tests.inbox_helpers import make_request

    settings.AGUI_UNDO_SECONDS = 5
    req = make_request("alice")
    finn = login("finn")
    on_private_redis.stop()
    response = finn.post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": ""})
    assert response.status_code == 302, response.content[:500]
    held = HeldDecision.objects.get(request=req)
    bulk = finn.post("/inbox/bulk/", {"ids": [make_request("alice").pk], "decision": "approve"},
                     HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert bulk.status_code == 200 and bulk.json()["succeeded"] == 1
    near = make_request("alice", timeout=60)  # its deadline's countdown is due within the horizon
    assert near.status == "pending"

    on_private_redis.start()
    HeldDecision.objects.filter(pk=held.pk).update(due_at=held.created_at)  # the window has closed
    approval_services.release_due()  # the beat's sweep sends what the countdown could not
    req.refresh_from_db()
    assert (req.status, req.decided_by) == ("approved", demo["finn"])
