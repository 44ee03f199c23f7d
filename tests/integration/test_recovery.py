"""A worker killed with SIGKILL in the middle of a tool: recovery reports `outcome_unknown` and repeats
nothing; an idempotent tool is retried once. A worker (or the web process) that dies between a
decision and its continuation: the approved call still runs exactly once. Real subprocess Celery workers on the test database
and the test Redis; the model is the fake OpenAI-compatible server."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core import mail
from django.db import close_old_connections, connection, transaction

from agents import dispatch, services
from agents.catalog.models import Transfer
from agents.models import Message, Run, ToolCall
from agents.runtime import execution
from agents.services import create_thread, start_run
from approvals import services as approval_services
from approvals.models import ApprovalRequest, AuditEvent
from tests.blocking_agent import keys
from tests.conftest import TEST_QUEUE, stream_events, wait_for_event

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
LEASE = 1.5


def database_url():
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """`python -m celery -A agui_project worker` in its own process group, on this session's queue."""

    def __init__(self, tmp_path, name, llm, visibility_timeout=300, pool="solo", **extra_env):
        env = {
            **os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL,
            "CELERY_BROKER_URL": settings.REDIS_URL, "CELERY_TASK_DEFAULT_QUEUE": TEST_QUEUE,
            "CELERY_VISIBILITY_TIMEOUT": str(visibility_timeout), "AGUI_EXTRA_AGENTS": "tests.blocking_agent",
            "AGUI_TOOL_LEASE_SECONDS": str(LEASE), "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": llm.base_url,
            "AGUI_MODEL": "fake-model", "AGUI_VAR_DIR": str(tmp_path / name), "PYTHONUNBUFFERED": "1",
            "LOG_LEVEL": "DEBUG",  # the tests read the worker's routine "Task ... received" lines
            **extra_env,
        }
        self.log = tmp_path / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "agui_project", "worker", "-Q", TEST_QUEUE, f"--pool={pool}",
             "--without-mingle", "--without-gossip", "--without-heartbeat", "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h",
             "--loglevel=INFO"],
            cwd=ROOT, env=env, start_new_session=True, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
        )

    def kill(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=20)

    def stop(self):
        if self.proc.poll() is None:
            self.kill(signal.SIGQUIT)  # Celery's cold shutdown: the test is over

    def output(self):
        return self.log.read_text(errors="replace")


@pytest.fixture
def blocking(settings):
    from agents.catalog import AGENTS, register_agent
    from approvals import registry
    from tests import blocking_agent

    settings.AGUI_TOOL_LEASE_SECONDS = LEASE
    register_agent(blocking_agent.AGENT)
    yield blocking_agent.AGENT
    AGENTS.pop("blocking", None)
    for t in blocking_agent.AGENT.tools:
        registry._registry.pop(t.name, None)


@pytest.fixture
def workers(tmp_path):
    started = []

    def start(name, llm, **kwargs):
        worker = Worker(tmp_path, name, llm, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def wait_until(check, timeout=30.0, what="condition", worker=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        close_old_connections()
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}" + (f"\n--- worker log ---\n{worker.output()}" if worker else ""))


def kill_mid_tool(demo, fake_llm, workers, tool_name):
    """Start a run whose tool blocks on worker 1; SIGKILL worker 1 while it blocks; wait for the lease to lapse."""
    r = redis.Redis.from_url(settings.REDIS_URL)
    token = uuid.uuid4().hex
    k = keys(token)
    fake_llm.push({"text": "Working on it.", "tool_calls": [
        {"id": f"call_{token[:12]}", "name": tool_name, "arguments": json.dumps({"token": token})}]})
    first = workers("worker1", fake_llm)
    thread = create_thread(demo["alice"], "blocking")
    run = start_run(thread, demo["alice"], "please block")
    # BLPOP in slices: redis-py's default socket timeout (5 s) is shorter than a worker's start-up
    wait_until(lambda: r.blpop([k["started"]], timeout=1), timeout=60, what="the tool to start", worker=first)
    call = ToolCall.objects.get(thread=thread)
    assert call.status == "executing" and call.attempts == 1
    # the live worker holds the lease (written a sixth of a lease after the tool began)
    wait_until(lambda: r.exists(execution.lease_key(call.pk)), timeout=10, what="the lease", worker=first)

    first.kill(signal.SIGKILL)  # mid-tool: no result, no ack, no cleanup
    assert first.proc.returncode == -signal.SIGKILL
    # a second worker comes up (Redis will hand it the killed task again: visibility timeout 1 s)
    second = workers("worker2", fake_llm, visibility_timeout=1)
    assert ToolCall.objects.get(pk=call.pk).status == "executing"
    # right after the kill the lease is still held (and the claim is fresh): recovery leaves it alone
    assert execution.recover_stuck_calls() == {}
    wait_until(lambda: not r.exists(execution.lease_key(call.pk)), timeout=10, what="the lease to lapse")
    return r, k, thread, run, call, second


def test_worker_killed_mid_tool_outcome_unknown_nothing_repeated(demo, fake_llm, blocking, workers):
    r, k, thread, run, call, second = kill_mid_tool(demo, fake_llm, workers, "block")
    wait_until(lambda: execution.stuck_call_ids() == [call.pk], timeout=10, what="the call to look stuck")
    assert execution.recover_stuck_calls() == {call.pk: "outcome_unknown"}  # the beat task's body
    assert execution.recover_stuck_calls() == {}  # twice is harmless

    call.refresh_from_db()
    assert call.status == "outcome_unknown" and "outcome of block is unknown" in call.result
    told = Message.objects.get(thread=thread, role="tool", tool_call_id=call.pk)
    assert "was not run again" in told.content
    dead = Run.objects.get(pk=run.pk)
    assert (dead.status, dead.error_code) == ("failed", "worker_lost")
    assert dead.error == "The worker stopped while block was running; its outcome is unknown and it was not repeated."
    assert any(e["type"] == "RUN_ERROR" and e["code"] == "worker_lost" for e in stream_events(thread.pk))
    audit = AuditEvent.objects.get(action="outcome_unknown")
    assert audit.object_ref == f"toolcall:{call.pk}" and audit.after == {"status": "outcome_unknown",
                                                                         "repeated": False}
    assert [m.to for m in mail.outbox] == [["admin@example.com"]]  # the operators
    assert mail.outbox[0].subject == f"[agui-inbox] Outcome unknown: block (tool call {call.pk})"

    # the second worker takes the continuation; Redis redelivered the killed task to it too
    continuation = Run.objects.get(parent_run=run)
    event, _ = wait_for_event(thread.pk, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR")
                              and e.get("runId") == continuation.pk, timeout=60)
    assert event["type"] == "RUN_FINISHED", second.output()
    last_request = fake_llm.requests[-1]["messages"]
    assert last_request[-1]["role"] == "tool" and "unknown" in last_request[-1]["content"]  # the model was told
    wait_until(lambda: r.hlen("unacked") == 0, timeout=30, what="the killed task's redelivery", worker=second)
    received = second.output().count("Task agents.tasks.run_agent[")
    assert received >= 2, second.output()  # the continuation, and the killed run delivered again
    assert int(r.get(k["calls"])) == 1  # ...and nothing ran twice
    assert ToolCall.objects.get(pk=call.pk).status == "outcome_unknown"
    assert Run.objects.get(pk=run.pk).status == "failed"
    r.rpush(k["release"], "go")


def test_an_idempotent_tool_is_retried_after_the_worker_dies(demo, fake_llm, blocking, workers):
    r, k, thread, run, call, second = kill_mid_tool(demo, fake_llm, workers, "block_idempotent")
    wait_until(lambda: execution.stuck_call_ids() == [call.pk], timeout=10, what="the call to look stuck")
    assert execution.recover_stuck_calls() == {call.pk: "retry"}
    assert ToolCall.objects.get(pk=call.pk).status == "approved"
    assert not Message.objects.filter(thread=thread, role="tool").exists()
    assert AuditEvent.objects.get(action="retried").object_ref == f"toolcall:{call.pk}"

    continuation = Run.objects.get(parent_run=run)
    event, _ = wait_for_event(thread.pk, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR")
                              and e.get("runId") == continuation.pk, timeout=60)
    assert event["type"] == "RUN_FINISHED", second.output()
    call.refresh_from_db()
    assert (call.status, call.attempts, call.result) == ("succeeded", 2, "finished attempt 2")
    assert int(r.get(k["calls"])) == 2  # the retry, once
    wait_until(lambda: r.hlen("unacked") == 0, timeout=30, what="the killed task's redelivery", worker=second)
    assert int(r.get(k["calls"])) == 2
    assert Message.objects.filter(thread=thread, role="tool").count() == 1
    assert mail.outbox == []  # nothing unknown to report


def test_a_call_whose_record_shows_it_done_is_settled_from_it_after_the_worker_dies(demo, fake_llm, blocking,
                                                                                   workers):
    r, k, thread, run, call, second = kill_mid_tool(demo, fake_llm, workers, "block_recorded")
    wait_until(lambda: execution.stuck_call_ids() == [call.pk], timeout=10, what="the call to look stuck")
    assert execution.recover_stuck_calls() == {call.pk: "succeeded"}
    call.refresh_from_db()
    assert (call.status, call.result) == ("succeeded", "finished attempt 1 (from its record)")
    assert Message.objects.get(thread=thread, role="tool", tool_call_id=call.pk).content == call.result
    assert AuditEvent.objects.get(action="outcome_reported").object_ref == f"toolcall:{call.pk}"

    continuation = Run.objects.get(parent_run=run)
    event, _ = wait_for_event(thread.pk, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR")
                              and e.get("runId") == continuation.pk, timeout=60)
    assert event["type"] == "RUN_FINISHED", second.output()
    assert fake_llm.requests[-1]["messages"][-1]["content"] == call.result  # the model read what it did
    wait_until(lambda: r.hlen("unacked") == 0, timeout=30, what="the killed task's redelivery", worker=second)
    assert int(r.get(k["calls"])) == 1  # never repeated
    assert mail.outbox == []  # nothing unknown for the operators to check
    r.rpush(k["release"], "go")


def test_worker_killed_mid_stream_the_run_is_answered_again(demo, fake_llm, blocking, workers):
    """SIGKILL while the model streams (no tool running): the run ends worker_lost, a continuation
    on a restarted worker answers from the stored history, and nothing is lost or doubled."""
    fake_llm.push({"text": " ".join(f"w{i}" for i in range(300)), "delay": 0.05})
    first = workers("worker1", fake_llm)
    thread = create_thread(demo["alice"], "banking")
    run = start_run(thread, demo["alice"], "tell me a long story")
    wait_for_event(thread.pk, lambda e: e["type"] == "TEXT_MESSAGE_CONTENT", timeout=60)
    r = redis.Redis.from_url(settings.REDIS_URL)
    # the live worker holds the run's lease (written a sixth of a lease after the run began)
    wait_until(lambda: r.exists(execution.run_lease_key(run.pk)), timeout=10, what="the run's lease", worker=first)
    assert execution.recover_stuck_runs() == []  # a live run is left alone

    first.kill(signal.SIGKILL)
    wait_until(lambda: not r.exists(execution.run_lease_key(run.pk)), timeout=10, what="the run lease to lapse")
    wait_until(lambda: execution.recover_stuck_runs() == [run.pk], timeout=10, what="the run to be recovered")
    assert execution.recover_stuck_runs() == []  # twice is harmless
    dead = Run.objects.get(pk=run.pk)
    assert (dead.status, dead.error_code) == ("failed", "worker_lost")

    fake_llm.push({"text": "Once upon a time, briefly."})
    second = workers("worker2", fake_llm, visibility_timeout=1)
    continuation = Run.objects.get(parent_run=run)
    event, _ = wait_for_event(thread.pk, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR")
                              and e.get("runId") == continuation.pk, timeout=60)
    assert event["type"] == "RUN_FINISHED", second.output()
    events = stream_events(thread.pk)
    assert [e["code"] for e in events if e["type"] == "RUN_ERROR"] == ["worker_lost"]
    # the continuation's request carried the user's message once, and its answer is stored once
    assert [m["role"] for m in fake_llm.requests[-1]["messages"]].count("user") == 1
    answers = list(Message.objects.filter(thread=thread, role="assistant").values_list("content", flat=True))
    assert answers == ["Once upon a time, briefly."]
    # the redelivered task of the killed run finds nothing to claim
    wait_until(lambda: r.hlen("unacked") == 0, timeout=30, what="the killed task's redelivery", worker=second)
    assert Run.objects.get(pk=run.pk).status == "failed"


# --- between a decision and its continuation ------------------------------------------------

TRANSFER_PROMPT = "Transfer $500 from account 1234567890 to account 0987654321"


def run_end(run_id):
    return lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e.get("runId") == run_id


def pause_transfer(demo, worker):
    """alice's transfer through a worker until it waits for finance; returns (thread, run, request)."""
    thread = create_thread(demo["alice"], "banking")
    run = start_run(thread, demo["alice"], TRANSFER_PROMPT)
    event, _ = wait_for_event(thread.pk, run_end(run.pk), timeout=60)
    # finance decides: the run is paused, and its end carries no interrupt for alice to answer
    assert event["type"] == "RUN_FINISHED" and "outcome" not in event, worker.output()
    assert Run.objects.get(pk=run.pk).status == Run.Status.INTERRUPTED
    return thread, run, ApprovalRequest.objects.get(thread_ref=thread.pk)


def assert_transferred_once(thread, run, req, finn, amount):
    continuation = Run.objects.get(parent_run=run)
    event, _ = wait_for_event(thread.pk, run_end(continuation.pk), timeout=60)
    assert event["type"] == "RUN_FINISHED", event
    assert [t.amount for t in Transfer.objects.all()] == [Decimal(amount)]
    call = ToolCall.objects.get(approval_id=req.pk)
    assert (call.status, call.attempts) == ("succeeded", 1)
    req.refresh_from_db()  # the decision itself is intact: who, what, with which arguments
    assert req.status == "modified" and req.final_arguments["amount"] == float(amount)
    assert list(req.decisions.values_list("user__username", "decision")) == [("finn", "approve")]
    results = [e for e in stream_events(thread.pk) if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and f"Transferred {amount} USD" in results[0]["content"]
    return continuation


def test_worker_killed_between_a_decision_and_its_continuation(demo, fake_llm, workers):
    """The continuation's task reaches a worker, which is SIGKILLed before it claims the run: a
    restarted worker gets the task again and the approved transfer runs once."""
    r = redis.Redis.from_url(settings.REDIS_URL)
    token = uuid.uuid4().hex
    k = keys(token)
    first = workers("worker1", fake_llm, AGUI_TEST_HOLD_CONTINUATIONS=token)
    thread, run, req = pause_transfer(demo, first)

    decided = approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 450})
    assert decided.status == "modified"
    continuation = Run.objects.get(parent_run=run)
    _, held = wait_until(lambda: r.blpop([k["started"]], timeout=1), timeout=60,
                         what="the continuation to reach worker 1", worker=first)
    assert held.decode() == continuation.pk
    first.kill(signal.SIGKILL)  # the task was received, never acknowledged; the run never claimed
    assert Run.objects.get(pk=continuation.pk).status == "queued"
    assert not Transfer.objects.exists()
    assert ToolCall.objects.get(approval_id=req.pk).status == "approved"

    second = workers("worker2", fake_llm, visibility_timeout=1)  # takes the unacknowledged task back
    assert assert_transferred_once(thread, run, req, demo["finn"], "450.00").pk == continuation.pk
    wait_until(lambda: r.hlen("unacked") == 0, timeout=30, what="the killed task's redelivery", worker=second)
    assert Transfer.objects.count() == 1


def test_a_decision_whose_process_died_before_the_call_heard_of_it(demo, fake_llm, workers, monkeypatch):
    """The web process dies right after the decision commits, before its on-commit hooks: the
    beat's resume_stalled finds the decided request and starts the continuation once."""
    worker = workers("worker1", fake_llm)
    thread, run, req = pause_transfer(demo, worker)
    with monkeypatch.context() as m:
        m.setattr(transaction, "on_commit", lambda func, using=None, robust=False: None)  # the process is gone
        approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 450})
    assert ToolCall.objects.get(approval_id=req.pk).status == "awaiting_approval"
    assert not Run.objects.filter(parent_run=run).exists()

    assert services.resume_stalled() == [run.pk]  # the beat task's body
    assert services.resume_stalled() == []  # twice is harmless
    assert_transferred_once(thread, run, req, demo["finn"], "450.00")


def test_a_continuation_whose_announce_was_lost_is_sent_by_the_beat(demo, fake_llm, workers, monkeypatch, settings,
                                                                    caplog):
    """The continuation row commits but its process dies before announcing it (no RUN_STARTED, no
    task): after AGUI_RUN_REQUEUE_SECONDS the beat's requeue_lost_runs announces it."""
    worker = workers("worker1", fake_llm)
    thread, run, req = pause_transfer(demo, worker)
    with monkeypatch.context() as m:
        m.setattr(dispatch, "announce", lambda run_id: None)  # the process is gone
        approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 450})
    continuation = Run.objects.get(parent_run=run)
    assert (continuation.status, continuation.stream_id) == ("queued", "")

    assert execution.requeue_lost_runs() == []  # younger than AGUI_RUN_REQUEUE_SECONDS: maybe only slow
    settings.AGUI_RUN_REQUEUE_SECONDS = 0
    with caplog.at_level("WARNING", logger="agents.runtime.execution"):
        assert execution.requeue_lost_runs() == [continuation.pk]
    assert f"sent again 1 run(s) still queued after 0 s, their task lost (a broker restart?): {continuation.pk}" in caplog.text
    assert_transferred_once(thread, run, req, demo["finn"], "450.00")
    started = [e for e in stream_events(thread.pk) if e["type"] == "RUN_STARTED" and e["runId"] == continuation.pk]
    assert len(started) == 1
    assert execution.requeue_lost_runs() == []  # finished: nothing left queued
