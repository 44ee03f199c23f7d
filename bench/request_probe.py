"""Wall and process CPU per request through the project's ASGI app, in-process (README
"Performance", *One request at a time*): a 404, POST /agui/banking/ on a new thread until the
RUN_STARTED frame, a decision over the REST API that continues a paused run, and an AG-UI resume
(the requester confirms a paused cancel_subscription) until its RUN_STARTED frame. Real Redis, the
test database, no worker (the run's task, and a decision's wake-up, are left in the test session's queue); then `continue`:
each resumed run executed here as the worker would (runner.run_agent, on the tests' fake model),
CPU of this thread only. A pytest module, so that it gets the test database and the demo users:

    REDIS_URL=redis://127.0.0.1:6379/<db> PROBE_N=60 .venv/bin/python -m pytest -p tests.conftest \
        bench/request_probe.py -q -s -p no:cacheprovider

PROBE_ONLY=post,decide measures only those kinds (`continue` needs `resume`); PROBE_PROFILE=DIR records a profile of each kind into DIR/probe-<kind>.pstats (see `profiled`). It prints `PROBE {"404": [wall ms, CPU ms], "post": [...], "decide": [...], "resume": [...],
"continue": [...]}` (medians). CPU is time.process_time() of the whole process (the request's
worker threads included), for `continue` time.thread_time() (not the fake model's server thread).
"""
import asyncio
import contextlib
import json
import logging
import os
import statistics
import time
import uuid

import pytest

N = int(os.environ.get("PROBE_N", "60"))
KINDS = set(os.environ.get("PROBE_ONLY", "404,post,decide,resume,continue").split(","))
WARM = 5  # the first requests of each kind warm imports and connections: not counted


@contextlib.contextmanager
def profiled(name):
    """With PROBE_PROFILE=DIR, a yappi profile (CPU time, every thread: a request's sync code runs
    on threads of its own, which cProfile would miss) of the timed requests of `name` (of
    `continue`: one run) into DIR/probe-<name>.pstats, for pstats (figures taken meanwhile are
    the profiler's, not the product's)."""
    where = os.environ.get("PROBE_PROFILE")
    if not where:
        yield
        return
    import yappi

    os.makedirs(where, exist_ok=True)
    yappi.clear_stats()
    yappi.set_clock_type("cpu")
    yappi.start()
    try:
        yield
    finally:
        yappi.stop()
        yappi.get_func_stats().save(os.path.join(where, f"probe-{name}.pstats"), type="pstat")


def run_input(thread_id, resume=None):
    body = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "tools": [], "context": [], "state": {},
            "messages": [{"id": f"m-{uuid.uuid4()}", "role": "user", "content": "hello"}]}
    if resume is not None:
        body.update(messages=[], resume=resume)
    return json.dumps(body).encode()


async def asgi_call(app, method, path, headers, body=b"", until_first=False, leave_after=None):
    """(response start and first body bytes, wall ms, CPU ms); `until_first`: timed to the first
    body bytes, after which the client goes (http.disconnect, as Daphne says it). Else the wall time
    is to the response's last bytes (what the client waits for), the CPU time to the end of the
    request's work (agui_project/answer_first.py: some follows the answer). `leave_after`: the client
    goes only once a body chunk holds these bytes (the next request then meets no writes of this one
    still going, as a client reading the run meets none)."""
    headers = [*headers, ("content-length", str(len(body)))]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
             "raw_path": path.encode(), "query_string": b"", "headers": [(k.encode(), v.encode()) for k, v in headers],
             "client": ("127.0.0.1", 1), "server": ("testserver", 80), "scheme": "http", "root_path": ""}
    got, out, sent, leave = asyncio.Event(), {}, [], asyncio.Event()

    async def receive():
        if not sent:
            sent.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        await (leave if leave_after else got).wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
        elif message["type"] == "http.response.body" and message.get("body") and "first" not in out:
            out["first"] = message["body"][:300]
            got.set()
        if message["type"] == "http.response.body" and not message.get("more_body"):
            out["answered"] = time.perf_counter()
        if leave_after and (leave_after in message.get("body", b"") or not message.get("more_body", True)):
            leave.set()

    t0, c0 = time.perf_counter(), time.process_time()
    task = asyncio.ensure_future(app(scope, receive, send))
    if until_first:
        await got.wait()
    else:
        await task
    wall, cpu = out.get("answered", time.perf_counter()) - t0, time.process_time() - c0
    if until_first:
        await asyncio.wait_for(task, 30)
    return out, wall * 1000, cpu * 1000


def paused_requests(demo, n):
    """n paused runs, each waiting on a finance-routed transfer: the ids of their requests."""
    from agents import services
    from agents.models import Run, ToolCall
    from approvals.models import ApprovalRequest
    from tests.helpers import transfer_request

    ids = []
    for _ in range(n):
        thread = services.create_thread(demo["alice"], "banking")
        run = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)
        call_id = f"call-{uuid.uuid4().hex[:10]}"
        req = transfer_request(demo["alice"])
        ApprovalRequest.objects.filter(pk=req.pk).update(thread_ref=thread.pk, run_ref=run.pk, tool_call_ref=call_id)
        msg = services.add_message(thread, "assistant", "", run=run, tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": "transfer_money", "arguments": "{}"}}])
        ToolCall.objects.create(id=call_id, run=run, thread=thread, message=msg, name="transfer_money", arguments={},
                                status=ToolCall.Status.AWAITING_APPROVAL, approval_id=req.pk)
        ids.append(req.pk)
    return ids


def paused_on_requester(demo, n):
    """n paused runs, each waiting on alice's own confirmation of cancel_subscription: (thread id,
    request id, run id) of each."""
    from agents import services
    from agents.models import Run, ToolCall
    from approvals import policy
    from approvals import services as approval_services

    args = {"subscription_id": "sub_123"}
    paused = []
    for _ in range(n):
        thread = services.create_thread(demo["alice"], "banking")
        run = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)
        call_id = f"call-{uuid.uuid4().hex[:10]}"
        msg = services.add_message(thread, "assistant", "", run=run, tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": "cancel_subscription", "arguments": json.dumps(args)}}])
        req = approval_services.request(
            tool_name="cancel_subscription", arguments=args, requester=demo["alice"],
            verdict=policy.evaluate("cancel_subscription", args), description="Cancel subscription sub_123",
            reason="asked to", thread_ref=thread.pk, run_ref=run.pk, tool_call_ref=call_id)
        ToolCall.objects.create(id=call_id, run=run, thread=thread, message=msg, name="cancel_subscription",
                                arguments=args, status=ToolCall.Status.AWAITING_APPROVAL, approval_id=req.pk)
        paused.append((thread.pk, req.pk, run.pk))
    return paused


@pytest.mark.django_db(transaction=True)
def test_request_probe(demo, fake_llm, monkeypatch, settings):
    from rest_framework.authtoken.models import Token

    settings.AGUI_MAX_RUNS_PER_HOUR = 10**9  # alice starts every run (PROBE_N=200 is over 300): none refused

    from agents import tasks
    from agui_project.asgi import django_asgi_app as app

    # a decision's wake-up goes to the broker as in production (a worker's task, left in this
    # session's queue), not run on the deciding thread as the suite's fixture has it
    monkeypatch.delattr(tasks.continue_decided, "delay")

    alice, _ = Token.objects.get_or_create(user=demo["alice"])
    finn, _ = Token.objects.get_or_create(user=demo["finn"])
    ids = paused_requests(demo, N + WARM)
    resumable = paused_on_requester(demo, N + WARM)
    as_alice = [("authorization", f"Bearer {alice.key}"), ("content-type", "application/json"), ("host", "localhost")]
    as_finn = [("authorization", f"Token {finn.key}"), ("content-type", "application/json"), ("host", "localhost")]

    async def one(name, i):
        if name == "404":
            return await asgi_call(app, "GET", "/api/no-such-route/", as_alice)
        if name == "post":
            r = await asgi_call(app, "POST", "/agui/banking/", as_alice, run_input(f"p-{uuid.uuid4()}"), until_first=True,
                                leave_after=b"MESSAGES_SNAPSHOT")
            assert b"RUN_STARTED" in r[0]["first"], r
            return r
        if name == "resume":
            thread_id, request_id, _run = resumable[i]
            body = run_input(thread_id, [{"interruptId": request_id, "status": "resolved", "payload": {"approved": True}}])
            r = await asgi_call(app, "POST", "/agui/banking/", as_alice, body, until_first=True)
            assert b"RUN_STARTED" in r[0]["first"] and b"RUN_ERROR" not in r[0]["first"], r
            return r
        r = await asgi_call(app, "POST", f"/api/approvals/{ids[i]}/decide/", as_finn, b'{"decision": "approve"}')
        assert r[0]["status"] == 200, r
        return r

    async def main():
        figures = {}
        for name in [k for k in ("404", "post", "decide", "resume") if k in KINDS]:
            timed = [await one(name, i) for i in range(WARM)]
            with profiled(name):
                timed = [await one(name, i) for i in range(WARM, N + WARM)]
            figures[name] = [round(statistics.median(r[1] for r in timed), 2),
                             round(statistics.median(r[2] for r in timed), 2)]
        return figures

    def continued():
        """Each resumed run as the worker executes it: settle (the cancellation), one model turn."""
        from agents.models import Run
        from agents.runtime import runner

        timed = []
        for k, (_thread_id, _request_id, run_id) in enumerate(resumable):
            fake_llm.push({"text": "Done: it is cancelled."})
            continuation = Run.objects.get(parent_run_id=run_id)
            t0, c0 = time.perf_counter(), time.thread_time()
            with profiled("continue") if k == WARM else contextlib.nullcontext():
                assert runner.run_agent(continuation.pk)
            timed.append(((time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000))
        timed = timed[WARM:]
        return [round(statistics.median(t[0] for t in timed), 2), round(statistics.median(t[1] for t in timed), 2)]

    logging.disable(logging.WARNING)  # the 404s' log lines
    try:
        figures = asyncio.run(main())
        if "continue" in KINDS:
            figures["continue"] = continued()
        print("\nPROBE", json.dumps(figures))
    finally:
        logging.disable(logging.NOTSET)
