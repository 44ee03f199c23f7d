"""The SSE transport of POST /agui/<agent>/: keep-alive comments while idle; a client that goes
away does not stop the run. The model's reply is held back on a gate, so "idle" is a fact of the
test, not a timing guess."""

import json
import threading
import uuid

import pytest
from asgiref.sync import async_to_sync
from rest_framework.authtoken.models import Token

from agents import agui
from agents.models import Message, Run
from tests.conftest import wait_for_event

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
KEEPALIVE = ": keep-alive\n\n"


@pytest.fixture
def gated_model(fake_llm):
    """The fake model answers only once `release` is set; `entered` tells that it was asked."""
    entered, release = threading.Event(), threading.Event()

    def reply(body):
        entered.set()
        if not release.wait(30):
            return {"error": 500, "error_message": "the test never released the reply"}
        return {"text": "Finally, the answer you waited for."}

    fake_llm.responder = reply
    yield entered, release
    release.set()  # never leave the worker blocked on a failed test


def start(client, demo, thread_id, run_id):
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    body = {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": f"msg-{uuid.uuid4()}", "role": "user", "content": "Take your time"}]}
    resp = client.post("/agui/banking/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    return resp.streaming_content


async def read_while_idle(content, entered, count):
    """Chunks as the client receives them, until `count` keep-alives came while the model was
    holding its reply (nothing else can be written then); then the client hangs up."""
    chunks, idle = [], 0
    async for chunk in content:
        chunks.append(chunk.decode())
        if chunks[-1] == KEEPALIVE and entered.is_set():
            idle += 1
            if idle == count:
                break
    await content.aclose()  # the client goes away mid-run
    return chunks


def test_keepalive_while_idle_and_disconnect_does_not_stop_the_run(
        celery_worker_live, gated_model, client, demo, monkeypatch):
    entered, release = gated_model
    monkeypatch.setattr(agui, "KEEPALIVE_SECONDS", 0.3)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    chunks = async_to_sync(read_while_idle)(start(client, demo, thread_id, run_id), entered, 2)

    # a keep-alive is a comment frame of its own; the events around it are untouched
    assert chunks[-2:] == [KEEPALIVE, KEEPALIVE]
    data = [chunk for chunk in chunks if chunk != KEEPALIVE]
    events = [json.loads(frame[len("data: "):]) for chunk in data for frame in chunk.split("\n\n") if frame]
    assert events[0]["type"] == "RUN_STARTED" and events[0]["runId"] == run_id
    assert not any(e["type"] in ("RUN_FINISHED", "RUN_ERROR") for e in events)
    assert Run.objects.get(pk=run_id).status == Run.Status.RUNNING

    # the client is gone; the run goes on and finishes where it lives (worker, stream, database)
    release.set()
    finished, _ = wait_for_event(thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR"))
    assert finished["type"] == "RUN_FINISHED" and finished["runId"] == run_id
    assert Run.objects.get(pk=run_id).status == Run.Status.SUCCEEDED
    assert Message.objects.get(thread_id=thread_id, role="assistant").content == "Finally, the answer you waited for."


def test_relay_ends_with_run_error_when_redis_stays_away(monkeypatch):
    """Past STREAM_GRACE_SECONDS of refused reads, an SSE client gets RUN_STARTED + RUN_ERROR
    (stream_unavailable) instead of a dropped connection; a shorter outage is waited out."""
    import redis

    outage = {"reads": 0}

    async def read(thread_id, after, block_ms=0, count=500):
        outage["reads"] += 1
        raise redis.ConnectionError("Connection refused")

    async def no_wait(seconds):
        clock["now"] += seconds  # the relay's backoff advances the test's clock instead of sleeping

    clock = {"now": 1000.0}
    monkeypatch.setattr(agui.events, "read", read)
    monkeypatch.setattr(agui, "sleep", no_wait)
    monkeypatch.setattr(agui, "monotonic", lambda: clock["now"])
    plan = agui.Plan(thread_id="t-1", run_id="r-1", position="0-0")

    async def collect():
        return [chunk async for chunk in agui.relay(plan)]

    chunks = async_to_sync(collect)()
    frames = [json.loads(line[6:]) for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]
    assert [(f["type"], f.get("code")) for f in frames] == [("RUN_STARTED", None), ("RUN_ERROR", "stream_unavailable")]
    assert frames[0]["runId"] == "r-1"
    assert outage["reads"] > agui.STREAM_GRACE_SECONDS  # one try a second, through the whole grace period
    assert KEEPALIVE in chunks  # the client's connection was kept alive meanwhile
