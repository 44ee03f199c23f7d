"""Builders shared by tests: a paused transfer without running a model; a run driven in-process;
the thread socket's events one at a time."""

import asyncio
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agents import services
from agents.models import Run, ToolCall
from agents.runtime import runner
from approvals import policy
from approvals import services as approval_services
from approvals.models import ApprovalRequest


def finance_decides_transfers(admin):
    """transfer_money always asks finance, whatever its code defaults say (a policy row)."""
    from django.contrib.auth.models import Group

    approval_services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group",
                                                     "approver_group": Group.objects.get(name="finance")}, admin)


def finance_member(username, email):
    """A member of finance (a second one beside the demo's finn, or someone's second account)."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(username, email=email, password="pw")
    user.groups.add(Group.objects.get(name="finance"))
    return user


TRANSFER_ARGS = {"from_account": "1234567890", "to_account": "0987654321", "amount": 500, "currency": "USD"}


def run_here(run_id):
    """A queued run executed on the test's thread, as its worker would: the run as it ended."""
    from agents.models import Run
    from agents.runtime import runner

    assert runner.run_agent(run_id)
    return Run.objects.get(pk=run_id)


def transfer_request(requester, amount=500.0, **overrides):
    """A pending transfer_money request routed to finance, as the runner would record it."""
    args = {"from_account": "1234567890", "to_account": "0987654321", "amount": amount, "currency": "USD"}
    args.update(overrides)
    verdict = policy.evaluate("transfer_money", args)
    return approval_services.request(
        tool_name="transfer_money", arguments=args, requester=requester, verdict=verdict,
        description=f"Transfer {amount:.2f} USD from 1234567890 to 0987654321", reason="asked to",
        thread_ref="t-test", run_ref="r-test", tool_call_ref="c-test",
    )


def paused_transfer(requester, call_id):
    """A run paused on a transfer finance decides: (the paused run, its pending request)."""
    thread = services.create_thread(requester, "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)
    req = transfer_request(requester)
    ApprovalRequest.objects.filter(pk=req.pk).update(thread_ref=thread.pk, run_ref=run.pk, tool_call_ref=call_id)
    msg = services.add_message(thread, "assistant", "", run=run, tool_calls=[
        {"id": call_id, "type": "function", "function": {"name": "transfer_money", "arguments": "{}"}}])
    ToolCall.objects.create(id=call_id, run=run, thread=thread, message=msg, name="transfer_money", arguments={},
                            status=ToolCall.Status.AWAITING_APPROVAL, approval_id=req.pk)
    return run, req


def run_prompt(thread, user, text):
    run = services.start_run(thread, user, text)
    assert runner.run_agent(run.pk)
    return Run.objects.get(pk=run.pk)


def run_continuation(paused):
    cont = Run.objects.get(parent_run=paused)
    assert runner.run_agent(cont.pk)
    return Run.objects.get(pk=cont.pk)


def socket_events(text):
    """The events of one thread-socket frame: an event object, or an array of the events that were
    ready together (agents/consumers.py frames)."""
    data = json.loads(text)
    return data if isinstance(data, list) else [data]


async def next_event(comm, timeout=10):
    """The next event on a thread socket (Channels' WebsocketCommunicator), one at a time."""
    pending = comm.__dict__.setdefault("pending_events", [])
    if not pending:
        pending.extend(socket_events(await comm.receive_from(timeout=timeout)))
    return pending.pop(0)


def next_event_sync(sock, timeout=30):
    """The same for a `websockets` sync client."""
    pending = sock.__dict__.setdefault("pending_events", [])
    if not pending:
        pending.extend(socket_events(sock.recv(timeout=timeout)))
    return pending.pop(0)


@contextmanager
def http_server(handler):
    """A threaded HTTP server on 127.0.0.1 with `handler` (a BaseHTTPRequestHandler), its base URL
    yielded, shut down after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def json_service():
    """An internal service answering every GET with a JSON schema (an enum of one secret): (its
    base URL, the paths it was asked), to show that a `$ref` is never fetched."""
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            body = json.dumps({"enum": ["internal-secret"]}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with http_server(Handler) as url:
        yield url, asked


def accept_each(listener, handle):
    """handle(conn) for each connection `listener` takes, until it is closed (a test's own server)."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        handle(conn)


async def asgi_get(app, path, headers=()):
    """A GET through an ASGI app as Daphne makes it: (status, {header: value}, body text)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "path": path,
             "raw_path": path.encode(), "query_string": b"", "headers": [(b"host", b"testserver"), *headers],
             "client": ("127.0.0.1", 1), "server": ("testserver", 80), "scheme": "http", "root_path": ""}
    sent, got = [], False

    async def receive():
        nonlocal got
        if not got:
            got = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body.decode()
