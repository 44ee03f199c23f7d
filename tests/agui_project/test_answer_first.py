"""agui_project/answer_first.py: inside answer_first(), what later() is given runs once the
request's response is sent (or its client has gone), on the request's own thread; elsewhere at once."""

import asyncio
import json
import logging
import threading

import pytest
from asgiref.sync import sync_to_async
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path as url

from agui_project.answer_first import answer_first, later
from agui_project.handler import ASGIHandler

LOG = []


def _deferring_view(request):
    LOG.append(("view", threading.get_ident()))
    with answer_first():
        later(lambda: LOG.append(("after", threading.get_ident())))
        if "fail" in request.GET:
            later(lambda: 1 / 0)  # logged; the next still runs
        later(lambda: LOG.append(("after too", threading.get_ident())))
    later(lambda: LOG.append(("outside the block: now", threading.get_ident())))
    return HttpResponse("decided")


urlpatterns = [url("defer/", _deferring_view)]


def _scope(method, path, headers=(), query=b""):
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
            "raw_path": path.encode(), "query_string": query, "client": ("127.0.0.1", 1),
            "headers": [(b"host", b"localhost"), *((k.encode(), v.encode()) for k, v in headers)],
            "server": ("testserver", 80), "scheme": "http", "root_path": ""}


async def _call(app, scope, body=b"", on_answer=None, client_goes=False):
    """The response's messages; `on_answer` is awaited as the last body bytes are sent (the server
    still holding them); `client_goes`: the client disconnects as soon as its body is read."""
    read, messages = [], []
    scope["headers"].append((b"content-length", str(len(body)).encode()))

    async def receive():
        if not read:
            read.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        if not client_goes:
            await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message):
        messages.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body") and on_answer:
            await on_answer()

    await app(scope, receive, send)
    return messages


@override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__)
def test_later_work_runs_after_the_response_on_the_requests_thread(caplog):
    LOG.clear()
    app = ASGIHandler()

    async def answered():
        LOG.append(("answer sent", None))

    with caplog.at_level(logging.ERROR, logger="agui_project.handler"):
        messages = asyncio.run(_call(app, _scope("GET", "/defer/", query=b"fail=1"), on_answer=answered))
    assert messages[0]["status"] == 200 and messages[-1]["body"] == b"decided"
    names = [name for name, _ in LOG]
    assert names == ["view", "outside the block: now", "answer sent", "after", "after too"]
    threads = {ident for name, ident in LOG if name != "answer sent"}
    assert len(threads) == 1 and threading.get_ident() not in threads  # the request's thread, not the loop's
    assert "work after the response failed" in caplog.text and "ZeroDivisionError" in caplog.text


def test_outside_a_request_later_runs_at_once():
    done = []
    with answer_first():
        later(lambda: done.append(1))
    assert done == [1]


@override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__)
def test_the_test_client_runs_later_work_before_it_answers(client):
    """Django's test client (WSGI-like, no request thread of ours): nothing to defer to."""
    LOG.clear()
    assert client.get("/defer/").content == b"decided"
    assert [name for name, _ in LOG] == ["view", "after", "after too", "outside the block: now"]


def _paused(demo):
    from tests.helpers import paused_transfer

    return paused_transfer(demo["alice"], "call-answer-first")


def _token(user):
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


def _decide_scope(demo, req):
    headers = [("authorization", f"Token {_token(demo['finn'])}"), ("content-type", "application/json")]
    return _scope("POST", f"/api/approvals/{req.pk}/decide/", headers)


def _state(paused_run):
    from agents.models import Run, ToolCall

    return (Run.objects.filter(parent_run=paused_run).exists(),
            ToolCall.objects.get(pk="call-answer-first").status)


@pytest.mark.django_db(transaction=True)
def test_the_decide_api_wakes_the_run_before_it_answers_and_tells_the_inbox_after(demo):
    """The paused run is woken before the answer (its person is not kept waiting on the decider's
    answer); the inbox's notices and webhooks (approval_event) follow the answer, before the request ends."""
    from agents.models import ToolCall
    from agui_project.asgi import django_asgi_app as app
    from approvals.signals import approval_event

    paused_run, req = _paused(demo)
    seen, told = {}, []

    def receiver(sender, kind, request, **kwargs):
        told.append(kind)

    async def answered():
        seen["at the answer"] = await sync_to_async(_state, thread_sensitive=False)(paused_run), list(told)

    approval_event.connect(receiver)
    try:
        messages = asyncio.run(_call(app, _decide_scope(demo, req), b'{"decision": "approve"}', on_answer=answered))
    finally:
        approval_event.disconnect(receiver)
    assert messages[0]["status"] == 200
    assert json.loads(b"".join(m.get("body", b"") for m in messages[1:]))["status"] == "approved"
    assert seen["at the answer"] == ((True, ToolCall.Status.APPROVED), [])
    assert told == ["decided"]


@pytest.mark.django_db(transaction=True)
def test_a_decision_whose_client_went_still_wakes_its_run(demo):
    """The client goes as soon as its body is sent: whether or not the view got to decide, a
    committed decision never stays without its continuation nor its notices once the request is over."""
    from agents.models import ToolCall
    from agui_project.asgi import django_asgi_app as app
    from approvals.models import ApprovalRequest
    from approvals.signals import approval_event

    paused_run, req = _paused(demo)
    told = []

    def receiver(sender, kind, request, **kwargs):
        told.append(kind)

    approval_event.connect(receiver)
    try:
        asyncio.run(_call(app, _decide_scope(demo, req), b'{"decision": "approve"}', client_goes=True))
    finally:
        approval_event.disconnect(receiver)
    req.refresh_from_db()
    if req.status == ApprovalRequest.Status.PENDING:  # cancelled before the view ran
        assert _state(paused_run) == (False, ToolCall.Status.AWAITING_APPROVAL) and told == []
    else:
        assert _state(paused_run) == (True, ToolCall.Status.APPROVED) and told == ["decided"]
