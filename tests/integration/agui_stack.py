"""A live stack (Daphne + Celery worker subprocesses on this test's database and Redis) and the
official AG-UI client (tests/agui_client/drive.mjs) driving it, for the tests of real clients.

The model is the fake OpenAI-compatible server (tests/fake_llm.py) in the test process; `Model`
is its script. A test adds replies of its own with `live_stack["model"].handlers.append(fn)`
(fn(body) -> reply or None, asked first), server settings with a `live_stack_env` fixture of its
own, and control actions (what only the server side can do) in `live_stack["controls"]`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from ag_ui.core import Event
from django.core.management import call_command
from django.utils import timezone
from pydantic import TypeAdapter

from agui_project.celery import app as celery_app
from tests.conftest import wait_for_event

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "tests" / "agui_client"
sys.path.insert(0, str(ROOT / "scripts"))
import devstack  # noqa: E402

EVENT = TypeAdapter(Event)
NODE_TIMEOUT = 300
# Rules of ag-ui-validate turned off, each with why. None: NOTES.md expected AGUI207 (a
# TOOL_CALL_RESULT whose call started in an earlier run) to flag every resumed run, but each
# continuation opens with MESSAGES_SNAPSHOT, whose assistant message names the paused call, so
# the validator knows it. (Checked: the 27 streams of a run give 0 errors, 0 warnings.)
VALIDATOR_OFF = {}


@pytest.fixture
def node():
    """The node binary, with @ag-ui/client installed next to drive.mjs; else skip, saying why."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the official AG-UI client (npm @ag-ui/client) cannot run")
    if not (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        reason = "npm is not installed" if shutil.which("npm") is None else "run `make test`"
        pytest.skip(f"tests/agui_client/node_modules is missing ({reason}; it runs npm ci there)")
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


def _text(content):
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


class Model:
    """The fake model's script: the offline demo script, plus a few prompts of this test's own."""

    def __init__(self):
        self.release = threading.Event()  # holds back the "[slow]" reply until the client is gone
        self.handlers = []  # a test's own replies, asked first: fn(body) -> reply or None

    def __call__(self, body):
        from agents.llm import scripted_reply

        for handler in self.handlers:
            reply = handler(body)
            if reply is not None:
                return reply
        messages, tools = body["messages"], body.get("tools") or []
        last = messages[-1]
        text = _text(last.get("content")) if last["role"] == "user" else ""
        if text.startswith("[slow]"):
            if not self.release.wait(60):
                return {"error": 500, "error_message": "the test never released the slow reply"}
            return {"text": "Here is the slow answer about savings accounts."}
        if text.startswith("[unavailable]"):
            return {"error": 503, "error_message": "the model is overloaded"}
        if "confetti" in text.lower() and any(t["function"]["name"] == "show_confetti" for t in tools):
            return {"tool_calls": [{"id": f"call_{uuid.uuid4().hex[:24]}", "name": "show_confetti",
                                    "arguments": json.dumps({"colour": "blue"})}]}
        if ", and " in text:  # two risky calls in one turn: two interrupts
            calls = [c for part in text.split(", and ")
                     for c in scripted_reply([{"role": "user", "content": part}], tools).get("tool_calls", [])]
            return {"text": "I'll do both; each needs an approval first.", "tool_calls": calls}
        return scripted_reply(messages, tools)


@pytest.fixture
def live_stack_env():
    """Extra environment (settings) for the server processes; a test module overrides it."""
    return {}


@pytest.fixture
def live_stack(transactional_db, fake_llm, settings, tmp_path, live_stack_env):
    """The stack alone; a test of a client asks for that client too (`node`, or its own fixture)."""
    from django.db import connection

    model = Model()
    fake_llm.responder = model
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "agui_project.settings",
        "DJANGO_DEBUG": "1",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": _database_url(connection.settings_dict),
        "REDIS_URL": settings.REDIS_URL,
        # the queue this pytest process enqueues to as well (tests/conftest.py), so that a
        # continuation started here (an expiry) reaches the worker subprocess
        "CELERY_TASK_DEFAULT_QUEUE": celery_app.conf.task_default_queue,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "AGUI_MODEL": "fake-model",
        "PYTHONUNBUFFERED": "1",
        # a response ends at a run paused on a group's review (the review tests set their own wait)
        "AGUI_SSE_REVIEW_WAIT_SECONDS": "0",
        **live_stack_env,
    })
    port = devstack.free_port()
    url = f"http://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    children = []
    try:
        for name, cmd in devstack.stack_commands("127.0.0.1", str(port), str(tmp_path / "beat"),
                                                 pool="threads", concurrency="2"):
            if name != "beat":  # deadlines are this test's business (the "expire" control request)
                children.append(devstack.spawn(name, cmd, env=env, log_path=logs / f"{name}.log"))
        devstack.wait_healthy(url, children)
        # env: what a test starts another server process with (tests/integration/test_scale_out.py)
        yield {"url": url, "model": model, "out": tmp_path / "client", "children": children, "controls": {},
               "env": env, "logs": logs}
    except devstack.NotHealthy as exc:
        pytest.fail(f"{exc}\n{_tails(children)}", pytrace=False)
    finally:
        devstack.stop_children(children, timeout=10)


def _tails(children):
    return "\n".join(f"----- {c.name} -----\n{c.tail(80)}" for c in children)


def _seed():
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from agents.catalog.models import Subscription

    call_command("seed_demo", stdout=open(os.devnull, "w"))
    alice = User.objects.get(username="alice")
    for ref, plan in (("sub_456", "Basic"), ("sub_789", "Family"), ("sub_999", "Student"), ("sub_321", "Sports")):
        Subscription.objects.create(ref=ref, owner=alice, plan=plan)
    return Token.objects.get_or_create(user=alice)[0].key


def _control(stack, request):
    """What the client cannot do itself; answers {"ok": true} once the effect is on the stream."""
    from agents.models import Run
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest

    if request["action"] == "expire":  # what the beat sweep does once the deadline has passed
        ApprovalRequest.objects.filter(pk=request["interruptId"]).update(expires_at=timezone.now() - timedelta(seconds=1))
        assert approval_services.expire(request["interruptId"])
        paused = ApprovalRequest.objects.get(pk=request["interruptId"]).run_ref
        continuation = Run.objects.get(parent_run_id=paused)
        wait_for_event(request["threadId"], lambda e: e["type"] == "RUN_FINISHED" and e["runId"] == continuation.pk)
    elif request["action"] == "release":
        stack["model"].release.set()
        wait_for_event(request["threadId"], lambda e: e["type"] == "RUN_FINISHED" and e["runId"] == request["runId"])
    elif request["action"] in stack["controls"]:
        return stack["controls"][request["action"]](request) or {"ok": True}
    else:
        raise AssertionError(f"unknown control request {request}")
    return {"ok": True}


def _drive(stack, node, token, scenarios=()):
    """Run drive.mjs to the end (`scenarios`: these names only, else the core list), serving its
    control requests; returns (summary, stderr, exit code)."""
    env = dict(os.environ, AGUI_BASE_URL=stack["url"], AGUI_TOKEN=token, AGUI_OUT_DIR=str(stack["out"]),
               AGUI_CONTROL="1")
    stderr_path = stack["out"].parent / "drive.stderr"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen([node, "drive.mjs", *([",".join(scenarios)] if scenarios else [])], cwd=CLIENT_DIR, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr, text=True)
        watchdog = threading.Timer(NODE_TIMEOUT, proc.kill)
        watchdog.start()
        last = ""
        try:
            for line in proc.stdout:
                if line.startswith("@@control "):
                    try:
                        answer = _control(stack, json.loads(line[len("@@control "):]))
                    except Exception as exc:  # tell the client, then fail here with the cause
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
    assert last.startswith("{"), f"drive.mjs printed no summary (exit {proc.returncode})\n{log}"
    return json.loads(last), log, proc.returncode


def _nulls(value, where="$"):
    if value is None:
        yield where
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _nulls(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nulls(item, f"{where}[{i}]")


def _validate(path, content_type):
    from ag_ui_validate.transport import TransportOptions, validate_body
    from ag_ui_validate.types import ValidatorOptions

    async def chunks():
        yield path.read_bytes()

    opts = TransportOptions(validator=ValidatorOptions(severity_overrides=dict(VALIDATOR_OFF)), recorded=True)
    return asyncio.run(validate_body(chunks(), content_type, opts)).report




def check_streams(stack, summary, aborted=()):
    """Every event round-trips through its ag_ui.core model and every complete stream passes
    ag-ui-validate; `aborted`: scenarios whose client walks away mid-stream. Returns the count."""
    for line in (stack["out"] / "events.jsonl").read_text().splitlines():
        data = json.loads(line)["event"]
        assert json.loads(EVENT.validate_python(data).model_dump_json(by_alias=True)) == data
        assert type(data["timestamp"]) is int, data
        assert not list(_nulls(data)), data
    checked, findings = 0, []
    for stream in summary["streams"]:
        if stream["status"] != 200 or not stream["contentType"].startswith("text/event-stream"):
            continue
        if stream["aborted"]:
            assert stream["scenario"] in aborted, stream
            continue
        report = _validate(stack["out"] / stream["file"], stream["contentType"])
        checked += 1
        findings += [f"{stream['file']}: {d.rule} {d.severity}: {d.message}" for d in report.diagnostics
                     if d.severity in ("error", "warning")]
    assert findings == [], "\n".join(findings)
    return checked


def drive_ok(stack, node, scenarios):
    """Seed, run these scenarios, and insist every one passed with valid streams; the summary."""
    token = _seed()
    summary, log, returncode = _drive(stack, node, token, scenarios)
    assert returncode == 0 and summary["ok"], f"{summary['failures']}\n{log[-6000:]}\n{_tails(stack['children'])}"
    assert {n: s["status"] for n, s in summary["scenarios"].items()} == {n: "passed" for n in scenarios}
    return summary
