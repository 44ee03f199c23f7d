"""The SSE transport of POST /agui/<agent>/: keep-alive comments while idle; with the abandoned-run
grace off, a client that goes away does not stop the run (tests/agents/test_abandoned_runs.py: what
happens with it on). The model's reply is held back on a gate, so "idle" is a fact of the test, not
a timing guess."""

import contextlib
import json
import threading
import uuid

import pytest
from asgiref.sync import async_to_sync
from rest_framework.authtoken.models import Token

from agents import dispatch
from agents.agui import relay
from agents.models import Message, Run
from agents.runtime import events
from approvals.models import ApprovalRequest
from tests.conftest import wait_for_event
from tests.fake_llm import default_responder

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


def start(client, demo, thread_id, run_id, text="Take your time"):
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    body = {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": f"msg-{uuid.uuid4()}", "role": "user", "content": text}]}
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


def test_keepalive_while_idle_and_with_the_grace_off_disconnect_does_not_stop_the_run(
        celery_worker_live, gated_model, client, demo, monkeypatch, settings):
    entered, release = gated_model
    settings.AGUI_ABANDONED_RUN_GRACE_SECONDS = -1  # never stopped for being unwatched
    monkeypatch.setattr(relay, "KEEPALIVE_SECONDS", 0.3)
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


@pytest.mark.parametrize("start_sent", [False, True])
def test_relay_ends_with_run_error_when_redis_stays_away(monkeypatch, settings, start_sent):
    """Past AGUI_STREAM_GRACE_SECONDS of refused reads, an SSE client gets RUN_STARTED + RUN_ERROR
    (stream_unavailable) instead of a dropped connection; a shorter outage is waited out. A client
    that has its RUN_STARTED already (the endpoint's early start) gets the RUN_ERROR alone."""
    import redis

    outage = {"reads": 0}

    async def read(thread_id, after, block_ms=0, count=500):
        outage["reads"] += 1
        raise redis.ConnectionError("Connection refused")

    async def no_wait(seconds):
        clock["now"] += seconds  # the relay's backoff advances the test's clock instead of sleeping

    clock = {"now": 1000.0}
    settings.AGUI_STREAM_GRACE_SECONDS = 20  # past one keep-alive (15 s)
    monkeypatch.setattr(relay.events, "read", read)
    monkeypatch.setattr(relay, "sleep", no_wait)
    monkeypatch.setattr(relay, "monotonic", lambda: clock["now"])
    plan = relay.Plan(thread_id="t-1", run_id="r-1", position="0-0", start_sent=start_sent)

    async def collect():
        return [chunk async for chunk in relay.relay(plan)]

    chunks = async_to_sync(collect)()
    frames = [json.loads(line[6:]) for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]
    assert [(f["type"], f.get("code")) for f in frames] == \
        [("RUN_STARTED", None)] * (not start_sent) + [("RUN_ERROR", "stream_unavailable")]
    assert start_sent or frames[0]["runId"] == "r-1"
    assert 20 < outage["reads"] <= 22  # one try a second, through the whole (configured) grace period
    assert KEEPALIVE in chunks  # the client's connection was kept alive meanwhile


def test_a_relay_following_a_review_rides_out_a_redis_outage_within_the_grace(monkeypatch, settings):
    """A client whose run paused on someone else's review follows its continuation: a Redis restart
    meanwhile ended its stream at once, silently, and the continuation (the decision came after
    Redis was back) never reached it. Within AGUI_STREAM_GRACE_SECONDS it is waited out, with
    keep-alives; past it the stream ends as it would at the review's deadline (cleanly: the paused
    run's RUN_FINISHED was its last event, and no new run began)."""
    import redis

    clock, outage = {"now": 1000.0}, {"reads": 0}
    started = json.dumps({"type": "RUN_STARTED", "threadId": "t-1", "runId": "c-1", "parentRunId": "p-1"},
                         separators=(",", ":"))  # as events.encode writes them
    finished = json.dumps({"type": "RUN_FINISHED", "threadId": "t-1", "runId": "c-1"}, separators=(",", ":"))

    async def read(thread_id, after, block_ms=0, count=500):
        outage["reads"] += 1
        if outage["reads"] <= 16:  # Redis away 16 s: past a keep-alive, within the grace
            raise redis.ConnectionError("Connection refused")
        return [("5-0", started), ("6-0", finished)]

    async def no_wait(seconds):
        clock["now"] += seconds

    settings.AGUI_STREAM_GRACE_SECONDS = 30
    monkeypatch.setattr(relay.events, "read", read)
    monkeypatch.setattr(relay, "sleep", no_wait)
    monkeypatch.setattr(relay, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(relay.replay, "continuation_head", lambda run_id: [])
    plan = relay.Plan(thread_id="t-1", parent_run_id="p-1", position="0-0", review_wait=120)

    async def collect(plan):
        return [chunk async for chunk in relay.relay(plan)]

    chunks = async_to_sync(collect)(plan)
    frames = [json.loads(line[6:]) for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]
    assert [(f["type"], f["runId"]) for f in frames] == [("RUN_STARTED", "c-1"), ("RUN_FINISHED", "c-1")]
    assert KEEPALIVE in chunks

    # Redis away for good: the stream ends once the grace is over, with no event (nothing began)
    outage["reads"], clock["now"] = -10_000, 1000.0
    assert async_to_sync(collect)(relay.Plan(thread_id="t-1", parent_run_id="p-1", review_wait=120)) == \
        [KEEPALIVE, KEEPALIVE]
    assert clock["now"] == 1031.0  # one try a second through the 30 s grace


def test_relay_whose_run_start_was_lost_ends_from_the_database(celery_worker_live, fake_llm, client, demo, monkeypatch):
    """Redis loses the thread's stream (a restart without persistence) after the run began but
    before its relay read anything: the relay can never see this run's RUN_STARTED. It keeps the
    client's connection open while the run goes on, then ends the client's stream from the
    database: RUN_STARTED, the messages, and the run's real ending (here: paused on an approval).
    The POST that announced a run sends the RUN_STARTED it wrote without reading it back; this is
    the relay of a run it did not announce (a plain POST following a live run, a continuation
    after a review), which reads the start from the stream."""
    monkeypatch.setattr(dispatch, "announced", lambda defer=False, sent=None: contextlib.nullcontext(dispatch.Announced()))
    entered, release = threading.Event(), threading.Event()

    def reply(body):
        entered.set()
        release.wait(30)
        return default_responder(body)  # the offline demo: a transfer, which needs approval

    fake_llm.responder = reply
    monkeypatch.setattr(relay, "KEEPALIVE_SECONDS", 0.3)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    content = start(client, demo, thread_id, run_id,
                    text="Transfer $500 from account 1234567890 to account 0987654321")
    try:
        assert entered.wait(20)  # the run is in the model's hands: its RUN_STARTED is on the stream
        assert events.redis_client().delete(events.stream_key(thread_id)) == 1

        async def read():
            chunks = []
            async for chunk in content:
                chunks.append(chunk.decode())
                if chunks.count(KEEPALIVE) == 2:
                    release.set()  # the relay waited, saying nothing it could not know; now the run goes on
                if chunks.count(KEEPALIVE) > 100:  # 30 s: a relay that never ends fails, not hangs
                    break
            await content.aclose()
            return chunks

        chunks = async_to_sync(read)()
    finally:
        release.set()
    assert chunks[:2] == [KEEPALIVE, KEEPALIVE]  # nothing was made up while the run was still running
    frames = [json.loads(line[6:]) for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]
    assert [f["type"] for f in frames] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "CUSTOM", "RUN_FINISHED"]
    assert frames[0]["runId"] == frames[3]["runId"] == run_id and frames[0]["threadId"] == thread_id
    assert [m["role"] for m in frames[1]["messages"]] == ["user", "assistant"]
    call = frames[1]["messages"][1]["toolCalls"][0]
    assert call["function"]["name"] == "transfer_money"
    request = ApprovalRequest.objects.get(run_ref=run_id)
    assert request.status == ApprovalRequest.Status.PENDING
    # finance decides: who decides, and nothing for this client to answer (the run is paused)
    assert frames[2]["name"] == "approval_status" and frames[2]["value"]["approvalId"] == request.pk
    assert frames[2]["value"]["toolCallId"] == call["id"] and frames[2]["value"]["decidedBy"] == "finance"
    assert "outcome" not in frames[3]
    assert Run.objects.get(pk=run_id).status == Run.Status.INTERRUPTED


def test_the_post_that_announced_its_run_sends_that_start_without_reading_it_back(
        celery_worker_live, fake_llm, client, demo, monkeypatch):
    """The RUN_STARTED a POST wrote to the thread's stream goes to its client as written (the same
    entry, read by nobody), and the relay's reads start after it; its watcher has joined by then."""
    from agents import watching

    reads = []
    real_read = relay.events.read

    async def counted(thread_id, after, **kw):
        reads.append(after)
        return await real_read(thread_id, after, **kw)

    monkeypatch.setattr(relay.events, "read", counted)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    content = start(client, demo, thread_id, run_id, text="hello")

    async def first_then_rest():
        it = aiter(content)
        first = (await anext(it)).decode()
        before, joined = list(reads), [m for m, _ in watching.watchers(thread_id)]
        rest = [chunk.decode() async for chunk in it]
        return first, before, joined, rest

    first, before, joined, rest = async_to_sync(first_then_rest)()
    assert before == []  # nothing was read before the start went out
    frames = [json.loads(line[6:]) for line in first.split("\n") if line.startswith("data: ")]
    assert frames[0]["type"] == "RUN_STARTED" and frames[0]["runId"] == run_id
    entry_id, payload = events.redis_client().xrange(events.stream_key(thread_id), count=1)[0]
    assert first.startswith(f"data: {payload[b'e'].decode()}\n\n")  # the stream's own entry
    assert reads[0] == entry_id.decode()  # and the reads go on after it
    assert joined == [run_id]
    later = [json.loads(line[6:]) for chunk in rest for line in chunk.split("\n") if line.startswith("data: ")]
    assert later[-1]["type"] == "RUN_FINISHED" and "RUN_STARTED" not in [f["type"] for f in later]


def _asgi_post(token, thread_id, run_id, text="hello"):
    """POST /agui/banking/ through the ASGI handler (as Daphne serves it: an ASGIRequest)."""
    from django.test import AsyncClient

    body = {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": f"msg-{uuid.uuid4()}", "role": "user", "content": text}]}
    return AsyncClient().post("/agui/banking/", json.dumps(body), content_type="application/json",
                              headers={"accept": "text/event-stream", "authorization": f"Bearer {token}"})


def _before_the_writes(monkeypatch, before):
    """endpoint.record (the POST's writes, on their thread) with before() run first."""
    from agents.agui import endpoint

    real_record = endpoint.record

    def record(*args, **kwargs):
        before()
        return real_record(*args, **kwargs)

    monkeypatch.setattr(endpoint, "record", record)


def _frames(chunks):
    return [json.loads(line[6:]) for chunk in chunks for line in chunk.split("\n") if line.startswith("data: ")]


def test_under_asgi_a_new_runs_start_goes_out_before_its_writes(celery_worker_live, fake_llm, demo, monkeypatch):
    """RUN_STARTED reaches the client while the message, the thread and the run are still being
    written (held here on a gate, so "before" is a fact of the test); the rest follows once they
    are: the conversation, the run to its end, and no second RUN_STARTED. The start is the very
    entry the stream holds for every other watcher."""
    from asgiref.sync import sync_to_async

    from agents.models import Thread

    gate = threading.Event()

    def held():
        if not gate.wait(30):
            raise AssertionError("the test never opened the gate")

    _before_the_writes(monkeypatch, held)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    token = Token.objects.get_or_create(user=demo["alice"])[0].key

    async def client():
        resp = await _asgi_post(token, thread_id, run_id)
        assert resp.status_code == 200
        it = aiter(resp.streaming_content)
        first = (await anext(it)).decode()
        written = await sync_to_async(lambda: (Thread.objects.filter(pk=thread_id).exists(),
                                               Run.objects.filter(pk=run_id).exists()))()
        gate.set()
        rest = [chunk.decode() async for chunk in it]
        return first, written, rest

    try:
        first, written, rest = async_to_sync(client)()
    finally:
        gate.set()
    assert [(f["type"], f["runId"]) for f in _frames([first])] == [("RUN_STARTED", run_id)]
    assert written == (False, False)
    later = _frames(rest)
    assert later[0]["type"] == "MESSAGES_SNAPSHOT" and later[0]["messages"][0]["content"] == "hello"
    assert later[-1]["type"] == "RUN_FINISHED" and "RUN_STARTED" not in [f["type"] for f in later]
    entry = events.redis_client().xrange(events.stream_key(thread_id), count=1)[0][1][b"e"].decode()
    assert first == f"data: {entry}\n\n"
    run = Run.objects.get(pk=run_id)
    assert run.status == Run.Status.SUCCEEDED and run.stream_id


def test_under_asgi_a_new_runs_writes_begin_once_its_start_is_sent(celery_worker_live, fake_llm, demo, monkeypatch):
    """The writes begin once the server has the RUN_STARTED (the response asks for what follows),
    not beside it: their thread would hold the GIL that the loop needs to send that frame. Then
    the run goes on as ever."""
    from asgiref.sync import sync_to_async

    began = threading.Event()
    _before_the_writes(monkeypatch, began.set)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    token = Token.objects.get_or_create(user=demo["alice"])[0].key

    async def client():
        resp = await _asgi_post(token, thread_id, run_id)
        # half a second for writes that would begin beside the start (they began at once before)
        early = await sync_to_async(began.wait, thread_sensitive=False)(0.5)
        it = aiter(resp.streaming_content)
        first = (await anext(it)).decode()
        rest = [chunk.decode() async for chunk in it]
        return early, first, rest

    early, first, rest = async_to_sync(client)()
    assert early is False
    assert [(f["type"], f["runId"]) for f in _frames([first])] == [("RUN_STARTED", run_id)]
    later = _frames(rest)
    assert later[0]["type"] == "MESSAGES_SNAPSHOT" and later[-1]["type"] == "RUN_FINISHED"
    assert began.is_set() and Run.objects.get(pk=run_id).status == Run.Status.SUCCEEDED


def test_under_asgi_a_client_gone_before_the_writes_end_abandons_its_run(demo, monkeypatch):
    """The client hangs up on its RUN_STARTED while the run is still being written (held on a gate):
    the message is stored and the run made all the same, then marked abandoned, as a relay's client
    going mid-run marks it (so the grace check stops it when nobody watches)."""
    import asyncio

    from asgiref.sync import sync_to_async

    from agents import watching
    from agents.models import Message

    gate = threading.Event()
    _before_the_writes(monkeypatch, lambda: gate.wait(30))
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)  # no worker: the run stays queued
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    token = Token.objects.get_or_create(user=demo["alice"])[0].key

    async def client():
        resp = await _asgi_post(token, thread_id, run_id, text="going already")
        it = aiter(resp.streaming_content)
        first = (await anext(it)).decode()
        waiting = asyncio.ensure_future(anext(it))
        await asyncio.sleep(0)  # one turn: the response now waits for the writes, held on the gate
        waiting.cancel()  # the client is gone: the server cancels its response, as Django does then
        gate.set()
        for _ in range(200):  # the loop must stay alive for the leave: poll here, up to 10 s
            if await sync_to_async(watching.abandoned_run)(thread_id) == run_id:
                break
            await asyncio.sleep(0.05)
        return first

    try:
        first = async_to_sync(client)()
    finally:
        gate.set()
    assert _frames([first])[0]["type"] == "RUN_STARTED"
    assert watching.abandoned_run(thread_id) == run_id
    assert Run.objects.filter(pk=run_id).exists()
    assert Message.objects.filter(thread_id=thread_id, content="going already").exists()


def test_under_asgi_a_new_thread_without_messages_is_handed_over_at_once(celery_worker_live, fake_llm, demo,
                                                                         monkeypatch):
    """The relay hands an early-started run to a worker after what the writes add (the
    conversation); a new thread with no message adds nothing to send, so it goes at once rather
    than after the next keep-alive or the fallback for a response that never starts (an hour each here)."""
    import asyncio

    monkeypatch.setattr(relay, "KEEPALIVE_SECONDS", 3600)
    monkeypatch.setattr(relay, "HAND_OVER_LATEST", 3600)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    token = Token.objects.get_or_create(user=demo["alice"])[0].key

    async def read():
        from django.test import AsyncClient

        body = {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [],
                "forwardedProps": {}, "messages": []}
        resp = await AsyncClient().post("/agui/banking/", json.dumps(body), content_type="application/json",
                                        headers={"authorization": f"Bearer {token}"})
        return [chunk.decode() async for chunk in resp.streaming_content]

    async def client():
        return await asyncio.wait_for(read(), 30)

    frames = _frames(async_to_sync(client)())
    assert frames[0]["type"] == "RUN_STARTED" and frames[-1]["type"] == "RUN_FINISHED"
    assert [f["type"] for f in frames].count("RUN_STARTED") == 1


def test_under_asgi_what_the_writes_refuse_follows_the_one_run_started(demo):
    """A refusal that only the writes find (here the thread id of a deleted chat, claimed for good)
    comes after the early RUN_STARTED as its RUN_ERROR: one RUN_STARTED, as every refusal has."""
    from agents.models import Thread, ThreadIdClaim

    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    ThreadIdClaim.objects.create(id=thread_id, owner=demo["bob"])
    token = Token.objects.get_or_create(user=demo["alice"])[0].key

    async def client():
        resp = await _asgi_post(token, thread_id, run_id)
        assert resp.status_code == 200
        return [chunk.decode() async for chunk in resp.streaming_content]

    frames = _frames(async_to_sync(client)())
    assert [(f["type"], f.get("code")) for f in frames] == [("RUN_STARTED", None), ("RUN_ERROR", "thread_id_used")]
    assert frames[0]["runId"] == run_id
    assert not Thread.objects.filter(pk=thread_id).exists() and not Run.objects.filter(pk=run_id).exists()


def _first_post_made_meanwhile(monkeypatch, demo, thread_id, text=None):
    """Another POST of alice's makes the thread (with `text`, and its queued run, which no worker
    takes; without, a thread whose runs are over) after this POST's check found none and before
    its writes: two tabs at once."""
    from agents import services
    from agents.models import Thread

    def other_tab():
        if Thread.objects.filter(pk=thread_id).exists():  # record() again, on the thread now found
            return
        thread = services.create_thread(demo["alice"], "banking", thread_id=thread_id)
        if text:
            services.start_run(thread, demo["alice"], text)

    if text:
        monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    _before_the_writes(monkeypatch, other_tab)


def _asgi_frames(token, thread_id, run_id, text="hello"):
    async def client():
        resp = await _asgi_post(token, thread_id, run_id, text)
        assert resp.status_code == 200
        return [chunk.decode() async for chunk in resp.streaming_content]

    return _frames(async_to_sync(client)())


def test_under_asgi_a_new_thread_made_meanwhile_by_the_callers_other_post_is_its_thread(demo, monkeypatch):
    """Two of the caller's POSTs start one new thread at once: the one whose writes come second is
    a message on the caller's own thread, refused as any is while its run is active (run_active),
    not as an id of someone else's or of a deleted chat ("start a new thread": it was thread_id_used)."""
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    _first_post_made_meanwhile(monkeypatch, demo, thread_id, text="from the first tab")
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    frames = _asgi_frames(token, thread_id, run_id, "from the second tab")
    assert [(f["type"], f.get("code")) for f in frames] == [("RUN_STARTED", None), ("RUN_ERROR", "run_active")]
    assert list(Message.objects.filter(thread_id=thread_id).values_list("content", flat=True)) == ["from the first tab"]
    assert not Run.objects.filter(pk=run_id).exists()


def test_under_asgi_a_new_thread_made_meanwhile_and_idle_takes_the_callers_message(
        celery_worker_live, fake_llm, demo, monkeypatch):
    """As above, the other POST's run over already: this POST's message is stored and answered."""
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    _first_post_made_meanwhile(monkeypatch, demo, thread_id)  # its run over already
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    frames = _asgi_frames(token, thread_id, run_id, "second")
    assert frames[0]["type"] == "RUN_STARTED" and frames[-1]["type"] == "RUN_FINISHED", frames
    assert Run.objects.get(pk=run_id).status == Run.Status.SUCCEEDED
    assert Message.objects.filter(thread_id=thread_id, content="second", run_id=run_id).exists()


def test_under_asgi_a_response_nobody_reads_still_hands_its_run_over(celery_worker_live, fake_llm, demo):
    """The client is gone before the response starts (its generator never runs): the writes,
    started by the view, store the message and hand the run to a worker all the same, and it
    runs to its end."""
    import asyncio

    from asgiref.sync import sync_to_async

    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    token = Token.objects.get_or_create(user=demo["alice"])[0].key

    async def client():
        resp = await _asgi_post(token, thread_id, run_id)
        assert resp.status_code == 200  # and never read
        for _ in range(400):  # the loop must stay alive for the writes' end: poll here, up to 20 s
            status = await sync_to_async(lambda: Run.objects.filter(pk=run_id).values_list("status", flat=True).first())()
            if status == Run.Status.SUCCEEDED:
                return status
            await asyncio.sleep(0.05)
        return status

    assert async_to_sync(client)() == Run.Status.SUCCEEDED


def test_a_frames_json_holds_no_character_splitlines_ends_a_line_at():
    """U+2028, U+2029 and U+0085 may stand unescaped in a JSON string (our events' JSON leaves them
    so); a client reading the stream with str.splitlines() (httpx's iter_lines: Microsoft Agent
    Framework's AGUIChatClient) cut the data line there and dropped the event."""
    delta = "a\u2028b\u2029c\x85d é 😀"
    payload = events.encode(events.TextMessageContentEvent(message_id="m", delta=delta))
    assert "\u2028" in payload  # what the event's own JSON holds
    sent = relay.frame(payload)
    assert sent.splitlines() == [sent[:-2], ""] and sent.endswith("\n\n")
    assert json.loads(sent.removeprefix("data: "))["delta"] == delta
    assert relay.frame('{"a":"plain é"}') == 'data: {"a":"plain é"}\n\n'
