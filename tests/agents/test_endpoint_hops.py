"""agents/agui/endpoint.py under an ASGI server: a POST that answers interrupts (or catches up)
is checked and written on one thread hop; a new message's run is checked on one and written on
another, after its RUN_STARTED has gone out."""

import asyncio
import json
import uuid

import pytest

from agui_project import handler


def _paused_on_alice(demo):
    """A run paused on alice's own confirmation of cancel_subscription: (thread id, request id)."""
    from agents import services
    from agents.models import Run, ToolCall
    from approvals import policy
    from approvals import services as approval_services

    args = {"subscription_id": "sub_123"}
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)
    msg = services.add_message(thread, "assistant", "", run=run, tool_calls=[
        {"id": "call-hops", "type": "function", "function": {"name": "cancel_subscription", "arguments": json.dumps(args)}}])
    req = approval_services.request(
        tool_name="cancel_subscription", arguments=args, requester=demo["alice"],
        verdict=policy.evaluate("cancel_subscription", args), description="Cancel subscription sub_123",
        reason="asked to", thread_ref=thread.pk, run_ref=run.pk, tool_call_ref="call-hops")
    ToolCall.objects.create(id="call-hops", run=run, thread=thread, message=msg, name="cancel_subscription",
                            arguments=args, status=ToolCall.Status.AWAITING_APPROVAL, approval_id=req.pk)
    return thread.pk, req.pk


async def _first_frame(app, token, body):
    """The hops of the request's thread until its first frame, and that frame."""
    body = json.dumps(body).encode()
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "path": "/agui/banking/", "raw_path": b"/agui/banking/", "query_string": b"",
             "headers": [(b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json"),
                         (b"host", b"localhost"), (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 1), "server": ("testserver", 80), "scheme": "http", "root_path": ""}
    hops, first, got, read = [], [], asyncio.Event(), []
    submit = handler.RequestThread.submit

    def counted(self, fn, /, *args, **kwargs):
        if not got.is_set():
            hops.append(fn)
        return submit(self, fn, *args, **kwargs)

    async def receive():
        if not read:
            read.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        await got.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.body" and message.get("body") and not first:
            first.append(message["body"])
            got.set()

    handler.RequestThread.submit = counted
    try:
        await app(scope, receive, send)
    finally:
        handler.RequestThread.submit = submit
    return len(hops), first[0]


@pytest.mark.django_db(transaction=True)
def test_a_resume_is_checked_and_written_on_one_hop(demo):
    from rest_framework.authtoken.models import Token

    from agents.models import ToolCall
    from agui_project.asgi import django_asgi_app as app

    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    thread_id, request_id = _paused_on_alice(demo)
    resume = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "messages": [], "tools": [], "context": [],
              "state": {}, "resume": [{"interruptId": request_id, "status": "resolved", "payload": {"approved": True}}]}
    hops, frame = asyncio.run(_first_frame(app, token, resume))
    assert b"RUN_STARTED" in frame and resume["runId"].encode() in frame
    assert hops == 1  # was 2: check(), then record()
    assert ToolCall.objects.get(pk="call-hops").status == ToolCall.Status.APPROVED

    new_message = {"threadId": f"t-{uuid.uuid4()}", "runId": f"run-{uuid.uuid4()}", "tools": [], "context": [],
                   "state": {}, "messages": [{"id": f"m-{uuid.uuid4()}", "role": "user", "content": "hello"}]}
    hops, frame = asyncio.run(_first_frame(app, token, new_message))
    assert b"RUN_STARTED" in frame and hops == 1  # its writes follow on a thread of their own
