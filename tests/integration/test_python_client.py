"""The Python client (clients/python, imported from its source: it is not a dependency of the
project) against the live stack: @require_approval asks, long-polls, runs the function with the
reviewer's (edited) arguments and reports the outcome; a rejection and a policy's deny raise."""

import os
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
from agui_inbox_client import Inbox, NotApproved, require_approval  # noqa: E402

from agui_project.handler import IDLE_REQUEST_THREADS  # noqa: E402
from approvals import services  # noqa: E402
from approvals.models import ApprovalRequest, OutsideCall  # noqa: E402

CRM_SCHEMA = {"type": "object", "required": ["email"], "additionalProperties": False,
              "properties": {"email": {"type": "string"}}}


@pytest.fixture
def people(live_stack):
    import os

    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    call_command("seed_demo", stdout=open(os.devnull, "w"))
    token = {u: Token.objects.get_or_create(user=User.objects.get(username=u))[0].key for u in ("alice", "finn", "rita")}
    inboxes = {u: Inbox(live_stack["url"], key) for u, key in token.items()}
    yield inboxes
    for inbox in inboxes.values():
        inbox.close()


def _pending(tool_name, timeout=30):
    """The request the decorated call made, once it is in the database (the call runs in a thread)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = ApprovalRequest.objects.filter(tool_name=tool_name, status="pending").first()
        if row:
            return row
        time.sleep(0.05)
    raise AssertionError(f"no pending request for {tool_name}")


def _in_thread(fn, **kwargs):
    box = {}

    def run():
        try:
            box["result"] = fn(**kwargs)
        except Exception as exc:  # re-raised in the test's thread by the caller
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def test_decorator_runs_the_edited_call_once_approved_and_reports(people):
    ran = []

    @require_approval("transfer_money", inbox=people["alice"], timeout=55)
    def transfer(from_account, to_account, amount, currency="USD"):
        ran.append((from_account, to_account, amount, currency))
        return "sent"

    started = time.monotonic()
    thread, box = _in_thread(transfer, from_account="1234567890", to_account="0987654321", amount=900.0)
    req = _pending("transfer_money")
    assert req.approver_group.name == "finance" and req.requester.username == "alice"
    # finn (finance) approves a smaller amount: the function runs with what he approved
    answer = httpx.post(f"{people['finn'].url}/api/approvals/{req.pk}/decide/",
                        headers=people["finn"].client.headers, timeout=10,
                        json={"decision": "approve", "feedback": "400 now, the rest next month",
                              "arguments": {"from_account": "1234567890", "to_account": "0987654321",
                                            "amount": 400.0, "currency": "USD"}})
    assert answer.status_code == 200, answer.text
    decided = time.monotonic()
    thread.join(30)
    assert not thread.is_alive() and "error" not in box, box
    assert box["result"] == "sent" and ran == [("1234567890", "0987654321", 400.0, "USD")]
    assert time.monotonic() - decided < 10 < 55 - (decided - started)  # the decision ended the long-poll
    row = OutsideCall.objects.get(request_id=req.pk)
    assert row.outcome == "succeeded" and ApprovalRequest.objects.get(pk=req.pk).status == "modified"


def test_wait_waits_then_a_rejection_raises_with_the_feedback(people):
    ran = []

    @require_approval("crm.delete_contact", inbox=people["alice"], schema=CRM_SCHEMA, timeout=55)
    def delete_contact(email):
        ran.append(email)

    approval = people["alice"].request("crm.probe", {"email": "x@example.com"}, schema=CRM_SCHEMA)
    before = time.monotonic()
    assert approval.refresh(wait=1).pending and time.monotonic() - before >= 0.9  # the server held the answer

    thread, box = _in_thread(delete_contact, email="a@example.com")
    req = _pending("crm.delete_contact")
    assert req.approver_group.name == "reviewers" and req.risk == "high"
    services.decide(req.pk, req.approver_group.user_set.get(username="rita"), "reject", feedback="keep this one")
    thread.join(30)
    assert not thread.is_alive() and ran == []
    error = box["error"]
    assert isinstance(error, NotApproved) and error.status == "rejected" and error.feedback == "keep this one"
    assert str(error) == "crm.delete_contact was rejected: keep this one"
    assert OutsideCall.objects.get(request_id=req.pk).outcome == ""  # nothing ran, nothing reported


def test_an_answer_with_guidance_is_not_run_and_carries_the_words(people):
    from django.contrib.auth.models import Group, User

    services.save_policy("crm.merge", {"mode": "always", "approver_kind": "group", "approver_group":
                                       Group.objects.get(name="reviewers"),
                                       "allowed_decisions": ["approve", "reject", "respond"]},
                         User.objects.get(username="admin"))
    ran = []

    @require_approval("crm.merge", inbox=people["alice"], schema=CRM_SCHEMA, timeout=55)
    def merge(email):
        ran.append(email)

    thread, box = _in_thread(merge, email="a@example.com")
    req = _pending("crm.merge")
    services.decide(req.pk, User.objects.get(username="rita"), "respond", feedback="Merge into b@example.com")
    thread.join(30)
    assert not thread.is_alive() and ran == []
    error = box["error"]
    assert isinstance(error, NotApproved) and error.responded and error.feedback == "Merge into b@example.com"
    assert str(error) == "crm.merge was not run; the reviewer answered: Merge into b@example.com"
    assert people["alice"].get(req.pk).responded


def test_an_async_tool_is_reported_once_it_has_run_and_its_wait_leaves_the_loop_free(people):
    """On an `async def` the wrapper reported "succeeded" as the coroutine was made, before it ran (and
    raised), and long-polled on the event loop's own thread."""
    import asyncio

    from django.contrib.auth.models import User

    loop_free = threading.Event()

    @require_approval("crm.async_delete", inbox=people["alice"], schema=CRM_SCHEMA, timeout=55)
    async def delete_contact(email):
        await asyncio.sleep(0)
        raise RuntimeError(f"CRM is down for {email}")

    async def main():
        async def meanwhile():
            loop_free.set()

        other = asyncio.ensure_future(meanwhile())
        try:
            return await delete_contact(email="q@example.com")
        finally:
            await other

    thread, box = _in_thread(asyncio.run, main=main())
    req = _pending("crm.async_delete")
    assert loop_free.wait(10)  # the loop ran another task while the call waited for its review
    services.decide(req.pk, User.objects.get(username="rita"), "approve")
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(box["error"], RuntimeError) and str(box["error"]) == "CRM is down for q@example.com"
    row = OutsideCall.objects.get(request_id=req.pk)
    assert (row.outcome, row.outcome_detail) == ("failed", "RuntimeError: CRM is down for q@example.com")


def test_an_async_tool_cancelled_as_it_runs_is_reported_failed(people):
    """Cancellation is no Exception: an approved call cancelled part-way (a timeout, a sibling's failure)
    reported nothing, its request approved with no outcome for ever."""
    import asyncio

    from django.contrib.auth.models import User

    running, box_loop = threading.Event(), {}

    @require_approval("crm.async_slow", inbox=people["alice"], schema=CRM_SCHEMA, timeout=55)
    async def slow(email):
        running.set()
        await asyncio.Event().wait()  # until cancelled

    async def main():
        box_loop["loop"], box_loop["task"] = asyncio.get_running_loop(), asyncio.current_task()
        try:
            await slow(email="q@example.com")
        except asyncio.CancelledError as exc:  # a BaseException: _in_thread keeps Exceptions only
            return exc

    thread, box = _in_thread(asyncio.run, main=main())
    req = _pending("crm.async_slow")
    services.decide(req.pk, User.objects.get(username="rita"), "approve")
    assert running.wait(30)
    box_loop["loop"].call_soon_threadsafe(box_loop["task"].cancel)
    thread.join(30)
    assert not thread.is_alive() and type(box["result"]).__name__ == "CancelledError"
    row = OutsideCall.objects.get(request_id=req.pk)
    assert (row.outcome, row.outcome_detail) == ("failed", "CancelledError: stopped before it finished")


def test_a_generator_is_refused_when_decorated():
    """Its body runs as it is iterated, after the wrapper reported it: an async generator was reported
    succeeded before it ran, and stayed so after it raised."""
    for body in ("def gen(n):\n    yield n", "async def gen(n):\n    yield n"):
        scope = {}
        exec(body, scope)
        with pytest.raises(TypeError, match="not a generator"):
            require_approval("crm.gen", inbox=object())(scope["gen"])


def test_a_denied_tool_raises_at_once(people, monkeypatch):
    from django.contrib.auth.models import User

    services.save_policy("crm.drop_all", {"mode": "deny", "approver_kind": "requester"},
                         User.objects.get(username="admin"))
    # no inbox given: the decorator makes one from the environment at its first call
    monkeypatch.setenv("AGUI_INBOX_URL", people["alice"].url)
    monkeypatch.setenv("AGUI_INBOX_TOKEN", people["alice"].client.headers["Authorization"].split()[1])

    @require_approval("crm.drop_all", timeout=5)
    def drop_all():
        raise AssertionError("must not run")

    with pytest.raises(NotApproved) as caught:
        drop_all()
    assert caught.value.status == "denied" and "mode deny" in caught.value.feedback


def test_the_client_needs_httpx_only():
    """clients/python is pip-installable on its own: it imports the standard library and httpx,
    and declares httpx."""
    import ast
    import tomllib

    package = ROOT / "clients" / "python"
    imported = set()
    for path in (package / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    assert {name for name in imported if name not in sys.stdlib_module_names} == {"httpx"}
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    assert project["name"] == "agui-inbox-client" and project["dependencies"] == ["httpx>=0.27"]


def test_waiting_agents_hold_no_thread_each(people, live_stack):
    """30 agents long-polling at once: while they wait, Daphne's threads are those of its shared
    pool and the request threads kept idle for the next requests, however many wait. (Each
    request's sync parts still get a thread of their own as it arrives and as it answers; before
    the wait let it go, every open wait kept one: +18 threads for 20.)"""
    web = next(c for c in live_stack["children"] if c.name == "web")
    threads = lambda: len(os.listdir(f"/proc/{web.proc.pid}/task"))  # noqa: E731
    alice = people["alice"]
    waits = [alice.request("crm.probe", {"n": n}, schema={"type": "object"}) for n in range(30)]
    before = threads()
    clients = [threading.Thread(target=w.refresh, kwargs={"wait": 6}) for w in waits]
    started = time.monotonic()
    for c in clients:
        c.start()
    waiting = []  # thread counts from 3 s to 5.5 s: every request has arrived and none has answered
    while any(c.is_alive() for c in clients):
        if 3 <= time.monotonic() - started <= 5.5:
            waiting.append(threads())
        time.sleep(0.05)  # sampling, not synchronisation: the joins end the loop
    assert all(w.pending for w in waits)  # each waited its 6 s and came back unanswered
    shared_pool = min(32, (os.cpu_count() or 1) + 4)  # the loop's default executor (thread_sensitive=False)
    assert waiting and max(waiting) - before <= shared_pool + IDLE_REQUEST_THREADS < 30, (before, waiting)
