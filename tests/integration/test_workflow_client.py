"""The support workflow through the official AG-UI client (@ag-ui/client HttpAgent) against a live
stack, and a worker SIGKILLed inside a workflow step.

The stack is real processes (Daphne, a Celery worker; no beat: this test does what the beat
would, when it should) on this test's database and Redis; the model is the fake OpenAI-compatible
server in this process, playing the offline demo script. `tests/agui_client/drive.mjs` runs the
scenarios `workflow_refund` and `workflow_restart` and asks this process over stdin for what only
the server side can do: a support reviewer's decision, holding a tool, killing and restarting the
worker. The worker loads the test-only `support_crash` workflow (tests/workflow_agents.py) through
AGUI_EXTRA_AGENTS: the support workflow whose lookup can be held inside the tool.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ag_ui.core import Event
from django.core.management import call_command
from pydantic import TypeAdapter

from agui_project.celery import app as celery_app
from tests.conftest import stream_events, wait_for_event

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "tests" / "agui_client"  # drive.mjs and the npm @ag-ui/client (tests/integration/test_agui_client.py)
sys.path.insert(0, str(ROOT / "scripts"))
import devstack  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
EVENT = TypeAdapter(Event)
NODE_TIMEOUT = 300
SECRETS = ("client-secret-ticket-7", "client-secret-ticket-8")


def _node_or_skip():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the official AG-UI client (npm @ag-ui/client) cannot run")
    if not (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip("tests/agui_client/node_modules is missing (`make test` runs npm ci there)")
    return node


def _database_url(db):
    """The running test database, for the child processes."""
    from urllib.parse import quote

    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    if db["ENGINE"].endswith("postgresql"):
        auth = quote(db["USER"] or "", safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    pytest.skip(f"no DATABASE_URL form for {db['ENGINE']}")


def _validate(path, content_type):
    """ag-ui-validate on a stream as it came off the wire (every rule on)."""
    from ag_ui_validate.transport import TransportOptions, validate_body
    from ag_ui_validate.types import ValidatorOptions

    async def chunks():
        yield path.read_bytes()

    opts = TransportOptions(validator=ValidatorOptions(), recorded=True)
    return asyncio.run(validate_body(chunks(), content_type, opts)).report


class Stack:
    def __init__(self, url, env, logs):
        self.url, self.env, self.logs, self.children = url, env, logs, []

    def spawn(self, name, log_name=None):
        cmd = dict(devstack.stack_commands("127.0.0.1", self.url.rsplit(":", 1)[1], "", pool="threads",
                                           concurrency="2"))[name]
        child = devstack.spawn(name, cmd, env=self.env, log_path=self.logs / f"{log_name or name}.log")
        self.children.append(child)
        return child

    def worker(self):
        return next(c for c in reversed(self.children) if c.name == "worker" and c.alive())

    def tails(self):
        return "\n".join(f"----- {c.name} -----\n{c.tail(80)}" for c in self.children)


@pytest.fixture
def workflow_stack(transactional_db, fake_llm, settings, tmp_path):
    from django.db import connection

    from agents.catalog import AGENTS, register_agent
    from tests import workflow_agents

    register_agent(workflow_agents.AGENT)  # this process recovers its calls (tool lookup: idempotent?)
    settings.AGUI_TOOL_LEASE_SECONDS = 1  # as in the worker: a dead worker's call is stuck after 1 s
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "agui_project.settings",
        "DJANGO_DEBUG": "1",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": _database_url(connection.settings_dict),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": celery_app.conf.task_default_queue,  # decisions made here reach the worker
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "AGUI_MODEL": "fake-model",
        "AGUI_EXTRA_AGENTS": "tests.workflow_agents",
        "AGUI_TOOL_LEASE_SECONDS": "1",
        "PYTHONUNBUFFERED": "1",
    })
    stack = Stack(f"http://127.0.0.1:{devstack.free_port()}", env, tmp_path / "logs")
    try:
        stack.spawn("worker")
        stack.spawn("web")
        devstack.wait_healthy(stack.url, stack.children)
        yield stack
    except devstack.NotHealthy as exc:
        pytest.fail(f"{exc}\n{stack.tails()}", pytrace=False)
    finally:
        devstack.stop_children(stack.children, timeout=10)
        AGENTS.pop(workflow_agents.AGENT.name, None)


def _seed():
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    call_command("seed_demo", stdout=open(os.devnull, "w"))
    return Token.objects.get_or_create(user=User.objects.get(username="alice"))[0].key


def _finished(thread_id, run_id):
    wait_for_event(thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e.get("runId") == run_id,
                   timeout=30)


def _decide(request):
    from django.contrib.auth.models import User

    from agents.models import Run
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest

    approval_services.decide(request["interruptId"], User.objects.get(username=request["username"]), "approve")
    paused = ApprovalRequest.objects.get(pk=request["interruptId"]).run_ref
    continuation = Run.objects.get(parent_run_id=paused)
    _finished(request["threadId"], continuation.pk)
    return {"ok": True, "runId": continuation.pk}


def _crash(stack, request, record):
    """SIGKILL the worker inside the held lookup, restart it, and do what the recovery beat does."""
    from agents.models import Run, ToolCall
    from agents.runtime import events, execution
    from approvals.models import ApprovalRequest
    from tests import workflow_agents

    thread_id, client = request["threadId"], events.redis_client()
    entered = client.blpop([workflow_agents.entered_key(thread_id)], timeout=30)
    assert entered, "the lookup never started"
    call_id = entered[1].decode()
    assert ToolCall.objects.get(pk=call_id).status == "executing"
    worker = stack.worker()
    worker.expected_exit = True
    worker.signal_group(signal.SIGKILL)
    worker.proc.wait(timeout=10)
    client.delete(workflow_agents.hold_key(thread_id))  # the restarted worker's lookup goes through
    stack.spawn("worker", "worker-restarted")
    devstack.wait_healthy(stack.url, [c for c in stack.children if c.alive()])
    # the dead worker's lease lapses on its own (1 s); then the beat's sweep finds the call
    deadline = time.monotonic() + 10
    while client.exists(execution.lease_key(call_id)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not client.exists(execution.lease_key(call_id)), "the dead worker's lease never lapsed"
    recovered = execution.recover_stuck_calls()  # what the beat's sweep does now that the lease lapsed
    assert recovered == {call_id: "retry"}, recovered
    killed = ToolCall.objects.get(pk=call_id).run_id
    continuation = Run.objects.get(parent_run_id=killed)
    _finished(thread_id, continuation.pk)
    approval = ApprovalRequest.objects.get(thread_ref=thread_id, status="pending")
    return {"ok": True, "runId": continuation.pk, "approvalId": approval.pk, "toolCallId": call_id}


def _control(stack, request, record):
    from agents.runtime import events
    from tests import workflow_agents

    record.append(request["action"])
    if request["action"] == "decide":
        return _decide(request)
    if request["action"] == "hold":
        events.redis_client().set(workflow_agents.hold_key(request["threadId"]), "1", ex=600)
        return {"ok": True}
    if request["action"] == "crash":
        return _crash(stack, request, record)
    raise AssertionError(f"unknown control request {request}")


def _drive(stack, node, token, out, scenarios):
    env = dict(os.environ, AGUI_BASE_URL=stack.url, AGUI_TOKEN=token, AGUI_OUT_DIR=str(out), AGUI_CONTROL="1")
    stderr_path = out.parent / "drive.stderr"
    record = []
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen([node, "drive.mjs", ",".join(scenarios)], cwd=CLIENT_DIR, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
        watchdog = threading.Timer(NODE_TIMEOUT, proc.kill)
        watchdog.start()
        last = ""
        try:
            for line in proc.stdout:
                if line.startswith("@@control "):
                    try:
                        answer = _control(stack, json.loads(line[len("@@control "):]), record)
                    except Exception as exc:
                        proc.stdin.write(json.dumps({"ok": False, "error": repr(exc)}) + "\n")
                        proc.stdin.flush()
                        raise
                    proc.stdin.write(json.dumps(answer) + "\n")
                    proc.stdin.flush()
                elif line.strip():
                    last = line
            proc.wait()
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
    log = stderr_path.read_text(errors="replace")
    assert last.startswith("{"), f"drive.mjs printed no summary (exit {proc.returncode})\n{log}\n{stack.tails()}"
    return json.loads(last), log, proc.returncode, record


def _steps(events):
    names, open_ = [], None
    for e in events:
        if e["type"] == "STEP_STARTED":
            assert open_ is None
            open_ = e["stepName"]
            names.append(open_)
        elif e["type"] == "STEP_FINISHED":
            assert open_ == e["stepName"]
            open_ = None
    return names, open_


def _of_run(events, run_id):
    start = next(i for i, e in enumerate(events) if e["type"] == "RUN_STARTED" and e["runId"] == run_id)
    end = next(i for i, e in enumerate(events) if i > start and e["type"] in ("RUN_FINISHED", "RUN_ERROR"))
    return events[start:end + 1]


def test_official_client_drives_the_support_workflow_through_a_worker_crash(workflow_stack, fake_llm, tmp_path):
    from agents.catalog.models import OrderAction
    from agents.models import InputRequest, Message, Run, ToolCall, WorkflowInstance

    node = _node_or_skip()
    token = _seed()
    out = tmp_path / "client"
    summary, log, returncode, record = _drive(workflow_stack, node, token, out, ["workflow_refund", "workflow_restart"])
    statuses = {name: s["status"] for name, s in summary["scenarios"].items()}
    assert returncode == 0 and summary["ok"], f"{summary['failures']}\n{log[-6000:]}\n{workflow_stack.tails()}"
    assert statuses == {"workflow_refund": "passed", "workflow_restart": "passed"} and summary["warnings"] == []
    assert record == ["decide", "hold", "crash", "decide"]
    refund, restart = summary["scenarios"]["workflow_refund"], summary["scenarios"]["workflow_restart"]

    # --- the refund: asked once, approved once, done once, by a tool that saw the forwarded props
    actions = {a.order.number: a for a in OrderAction.objects.select_related("order")}
    assert set(actions) == {"12345", "12346"} and all(a.kind == "refund" for a in actions.values())
    assert actions["12345"].client_context == {"ticket": SECRETS[0], "channel": "agui-client"}
    assert actions["12346"].client_context == {"ticket": SECRETS[1]}
    assert InputRequest.objects.get(pk=refund["questionId"]).answer == {"order_id": "12345"}
    for secret in SECRETS:
        assert secret not in json.dumps(fake_llm.requests)

    # --- the crash: the killed run failed (worker_lost); the recovered continuation repeated nothing
    killed = Run.objects.get(pk=restart["killedRunId"])
    assert killed.status == "failed" and killed.error_code == "worker_lost"
    recovered = Run.objects.get(pk=restart["recoveredRunId"])
    assert recovered.parent_run_id == killed.pk and recovered.status == "interrupted"
    assert Run.objects.get(pk=restart["completedRunId"]).status == "succeeded"
    thread_id = restart["threadId"]
    calls = ToolCall.objects.filter(thread_id=thread_id).order_by("created_at")
    assert [(c.name, c.status) for c in calls] == [
        ("handoff_to_refund_agent", "succeeded"), ("request_info", "succeeded"),
        ("lookup_order_details", "succeeded"), ("submit_refund", "succeeded")]
    lookup = calls[2]
    assert lookup.attempts == 2  # the attempt the worker died in never reported; the idempotent read ran again
    assert Message.objects.filter(thread_id=thread_id, role="tool", tool_call_id=lookup.pk).count() == 1
    instance = WorkflowInstance.objects.get(thread_id=thread_id)
    assert instance.case == 2  # case 1 completed; "Thanks" opened case 2 at triage
    events = stream_events(thread_id)
    per_run = {run_id: _steps(_of_run(events, run_id)) for run_id in
               (killed.pk, recovered.pk, restart["completedRunId"])}
    assert per_run[killed.pk] == (["refund_agent"], "refund_agent")  # died inside the step; RUN_ERROR closed it
    assert per_run[recovered.pk] == (["refund_agent"], None)  # same agent, same step, closed
    assert per_run[restart["completedRunId"]] == (["refund_agent"], None)
    # the model after the restart got the saved-state summary and did not redo the question or the handoff
    recovered_requests = [r for r in fake_llm.requests
                          if any("resuming the support_crash workflow" in (m.get("content") or "")
                                 for m in r["messages"] if m["role"] == "system")]
    assert recovered_requests, "no continuation request carried the resume summary"
    summary_text = next(m["content"] for m in recovered_requests[0]["messages"][1:2])
    assert "triage_agent: handoff_to_refund_agent" in summary_text and "refund_agent: request_info" in summary_text
    assert "Do not repeat completed steps" in summary_text

    # --- every event off the wire round-trips; ag-ui-validate on every complete stream
    for line in (out / "events.jsonl").read_text().splitlines():
        data = json.loads(line)["event"]
        assert json.loads(EVENT.validate_python(data).model_dump_json(by_alias=True)) == data
    findings, checked = [], 0
    for stream in summary["streams"]:
        if stream["status"] != 200 or not stream["contentType"].startswith("text/event-stream"):
            continue
        report = _validate(out / stream["file"], stream["contentType"])
        checked += 1
        findings += [f"{stream['file']}: {d.rule} {d.severity}: {d.message}" for d in report.diagnostics
                     if d.severity in ("error", "warning")]
    assert checked == 7 and findings == [], "\n".join(findings)  # 4 refund streams, 3 restart streams
