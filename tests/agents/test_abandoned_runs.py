"""A run whose AG-UI client closed its stream mid-run (@ag-ui/client's abortRun, CopilotKit's Stop)
is abandoned: a new message on the thread stops it at once and is answered after it, in order; with
nobody watching it is stopped after AGUI_ABANDONED_RUN_GRACE_SECONDS; while the chat or another
stream watches the thread it goes on; once paused on an approval it is not touched. Real worker, real Redis; the client goes away as Daphne makes
a response go when its client disconnects (the task serving it is cancelled)."""

import asyncio
import json
import threading
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from rest_framework.authtoken.models import Token

from agents import services
from agents.agui import relay
from agents.models import Message, Run
from agents.routing import websocket_urlpatterns
from tests.conftest import stream_events, wait_for_event

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
# a reply that streams for about 10 s (200 pieces, 50 ms apart): the run is mid-stream when its
# client goes away, and stops at its next piece once asked
LONG_TEXT = " ".join(f"word{i}" for i in range(600))
LONG_REPLY = {"text": LONG_TEXT, "delay": 0.05}


def post(client, demo, thread_id, run_id, texts):
    """POST /agui/banking/ as @ag-ui/client does: the whole history of the person's messages."""
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    body = {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": f"msg-{i}", "role": "user", "content": t} for i, t in enumerate(texts)]}
    resp = client.post("/agui/banking/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    return resp.streaming_content


def frames(chunks):
    return [json.loads(line[6:]) for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]


async def abandon(content, until):
    """Serve the stream until `until(chunks)` holds, then go away mid-run: the serving task is
    cancelled, as Django cancels it when Daphne reports the client's disconnect."""
    chunks, ready = [], asyncio.Event()

    async def serve():
        async for chunk in content:
            chunks.append(chunk.decode())
            if await until(chunks):
                ready.set()

    task = asyncio.create_task(serve())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert ready.is_set(), f"the stream ended or stalled before the client left: {chunks}"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return chunks


async def text_is_streaming(chunks):
    return "TEXT_MESSAGE_CONTENT" in chunks[-1]


def run_status(run_id):
    return Run.objects.get(pk=run_id).status


def test_a_new_message_supersedes_the_run_its_client_abandoned(celery_worker_live, fake_llm, client, demo, settings):
    settings.AGUI_ABANDONED_RUN_GRACE_SECONDS = -1  # here only the new message may stop it
    fake_llm.push(LONG_REPLY, "The short version: savings earn interest.")
    thread_id, first, second = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    async_to_sync(abandon)(post(client, demo, thread_id, first, ["Tell me everything about savings"]),
                           text_is_streaming)
    assert run_status(first) == Run.Status.RUNNING  # leaving alone did not stop it

    content = post(client, demo, thread_id, second, ["Tell me everything about savings", "Just the short version"])

    async def read_all():
        return [chunk.decode() async for chunk in content]

    answered = frames(async_to_sync(read_all)())
    assert answered[0]["type"] == "RUN_STARTED" and answered[0]["runId"] == second
    assert answered[-1]["type"] == "RUN_FINISHED" and answered[-1].get("outcome", {"type": "success"}) == {
        "type": "success"}, answered[-1]
    assert "".join(e["delta"] for e in answered if e["type"] == "TEXT_MESSAGE_CONTENT") == (
        "The short version: savings earn interest.")
    assert run_status(first) == Run.Status.CANCELLED and run_status(second) == Run.Status.SUCCEEDED

    # the stored history, in order: the abandoned run's question and what it said before it was
    # stopped, then the new message and its answer
    history = list(Message.objects.filter(thread_id=thread_id).order_by("seq").values_list("role", "run_id", "content"))
    assert [(role, run) for role, run, _ in history] == [
        ("user", first), ("assistant", first), ("user", second), ("assistant", second)]
    partial = history[1][2]
    assert partial and LONG_TEXT.startswith(partial) and len(partial) < len(LONG_TEXT)
    assert history[3][2] == "The short version: savings earn interest."
    # the model answering the new message saw the whole conversation, in that order
    asked = [(m["role"], m["content"]) for m in fake_llm.requests[1]["messages"] if m["role"] != "system"]
    assert asked == [("user", "Tell me everything about savings"), ("assistant", partial),
                     ("user", "Just the short version")]
    # on the thread's stream the old run ends cancelled before the new one starts
    ends = [(e["type"], e["runId"], e.get("outcome")) for e in stream_events(thread_id)
            if e["type"] in ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR")]
    assert ends == [("RUN_STARTED", first, None), ("RUN_FINISHED", first, {"type": "cancelled"}),
                    ("RUN_STARTED", second, None), ("RUN_FINISHED", second, None)]


def test_an_abandoned_run_nobody_watches_is_stopped_after_the_grace(celery_worker_live, fake_llm, client, demo,
                                                                     settings):
    settings.AGUI_ABANDONED_RUN_GRACE_SECONDS = 0.5
    fake_llm.push(LONG_REPLY)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    async_to_sync(abandon)(post(client, demo, thread_id, run_id, ["Tell me everything about savings"]),
                           text_is_streaming)

    end, _ = wait_for_event(thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e["runId"] == run_id)
    assert end["type"] == "RUN_FINISHED" and end["outcome"] == {"type": "cancelled"}
    assert run_status(run_id) == Run.Status.CANCELLED
    said = Message.objects.get(thread_id=thread_id, role="assistant").content
    assert said and LONG_TEXT.startswith(said) and len(said) < len(LONG_TEXT)  # what it said is kept


@pytest.mark.parametrize("watcher", ["chat socket", "another stream"])
def test_an_abandoned_run_goes_on_while_the_thread_is_watched(watcher, celery_worker_live, fake_llm, client, demo,
                                                               settings, monkeypatch):
    """The model holds its reply until the grace check has run (a spy says when), so the run
    cannot end before it by itself; once released it finishes as if its client had stayed."""
    settings.AGUI_ABANDONED_RUN_GRACE_SECONDS = 0.2
    entered, release, checked = threading.Event(), threading.Event(), []
    check_ran = threading.Event()

    def reply(body):
        entered.set()
        if not release.wait(30):
            return {"error": 500, "error_message": "the test never released the reply"}
        return {"text": "Finally, the answer you waited for."}

    real_check = services.stop_abandoned_run

    def spy(run_id):
        checked.append(real_check(run_id))
        check_ran.set()

    fake_llm.responder = reply
    monkeypatch.setattr(services, "stop_abandoned_run", spy)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    content = post(client, demo, thread_id, run_id, ["Take your time"])

    async def scenario():
        if watcher == "chat socket":  # the browser chat of the same thread (agents/consumers.py)
            other = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/threads/{thread_id}/")
            other.scope["user"] = demo["alice"]
            assert (await other.connect())[0]
        else:  # an AG-UI stream of the thread waiting for a run of its own
            waiting = relay.watched_relay(relay.Plan(thread_id=thread_id, run_id=f"run-{uuid.uuid4()}",
                                                     position="$"))
            other = asyncio.create_task(anext(waiting))

        async def model_asked(chunks):
            return await sync_to_async(entered.wait)(20)

        try:
            await abandon(content, model_asked)
            assert await sync_to_async(check_ran.wait)(20)
            assert checked == [False]  # looked at after the grace: watched, so not stopped
            release.set()
            # the watcher stays until the end: once nobody watches, the grace would run again
            return await sync_to_async(wait_for_event)(
                thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e["runId"] == run_id)
        finally:
            release.set()
            if watcher == "chat socket":
                await other.disconnect()
            else:
                other.cancel()  # that client goes away too
                with pytest.raises(asyncio.CancelledError):
                    await other

    try:
        end, _ = async_to_sync(scenario)()
    finally:
        release.set()
    assert end["type"] == "RUN_FINISHED" and "outcome" not in end
    assert run_status(run_id) == Run.Status.SUCCEEDED
    assert Message.objects.get(thread_id=thread_id, role="assistant").content == "Finally, the answer you waited for."


def test_an_abandoned_run_that_paused_on_an_approval_is_not_touched(celery_worker_live, fake_llm, client, demo,
                                                                    settings, monkeypatch):
    """The client leaves mid-run; the run then pauses on an approval (interrupted, not running).
    The grace check is held until the pause (a spy), so it meets the paused run: nothing withdrawn."""
    from approvals.models import ApprovalRequest
    from tests.fake_llm import default_responder

    settings.AGUI_ABANDONED_RUN_GRACE_SECONDS = 0.2
    entered, release, paused, check_ran, checked = (threading.Event(), threading.Event(), threading.Event(),
                                                    threading.Event(), [])

    def reply(body):
        entered.set()
        release.wait(30)
        return default_responder(body)  # the offline demo: a transfer, which waits for finance

    real_check = services.stop_abandoned_run

    def spy(run_id):
        paused.wait(30)
        checked.append(real_check(run_id))
        check_ran.set()

    fake_llm.responder = reply
    monkeypatch.setattr(services, "stop_abandoned_run", spy)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    content = post(client, demo, thread_id, run_id, ["Transfer $500 from account 1234567890 to account 0987654321"])

    async def model_asked(chunks):
        return await sync_to_async(entered.wait)(20)

    try:
        async_to_sync(abandon)(content, model_asked)
        release.set()
        end, _ = wait_for_event(thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e["runId"] == run_id)
        assert end["type"] == "RUN_FINISHED" and run_status(run_id) == Run.Status.INTERRUPTED
    finally:
        release.set()
        paused.set()
    assert check_ran.wait(20)
    assert checked == [False]
    assert run_status(run_id) == Run.Status.INTERRUPTED
    assert not services.cancel_requested(run_id)
    assert ApprovalRequest.objects.get(run_ref=run_id).status == ApprovalRequest.Status.PENDING
