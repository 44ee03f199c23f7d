"""State from people: patches on the thread WebSocket and RunAgentInput.state on the AG-UI endpoint."""

import json
import uuid

import jsonpatch
import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents import services
from agents.llm.scripted.state import CARBONARA
from agents.routing import websocket_urlpatterns
from agents.runtime import statesync
from state import services as state_services
from tests.agents.test_agui import refusal, sse_events
from tests.helpers import next_event

pytestmark = [pytest.mark.django_db(transaction=True)]


def communicator(thread, user):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/threads/{thread.pk}/")
    comm.scope["user"] = user
    return comm


class Tab:
    """One browser tab: applies what the socket sends to its copy of the state, like chat.js."""

    def __init__(self, thread, user):
        self.comm = communicator(thread, user)
        self.state, self.version, self.frames = None, 0, []

    async def open(self):
        assert (await self.comm.connect())[0]
        await self.until(lambda f: f.get("type") == "CUSTOM" and f.get("name") == "approvals")
        return self

    async def until(self, predicate):
        """The first frame not yet waited for that matches: replies and stream events may interleave."""
        for i, frame in enumerate(self.frames):
            if predicate(frame):
                del self.frames[i]
                return frame
        for _ in range(200):
            frame = await next_event(self.comm)
            if frame.get("type") == "STATE_SNAPSHOT":
                self.state = frame["snapshot"]
            elif frame.get("type") == "STATE_DELTA":
                self.state = jsonpatch.apply_patch(self.state, frame["delta"])
            elif frame.get("type") == "CUSTOM" and frame.get("name") == "state_version":
                self.version = frame["value"]["version"]
            if predicate(frame):
                return frame
            self.frames.append(frame)
        raise AssertionError("frame never came")

    async def patch(self, ops, base, ref="r1"):
        await self.comm.send_to(text_data=json.dumps({"type": "state_patch", "baseVersion": base, "patch": ops, "ref": ref}))

    async def close(self):
        await self.comm.disconnect()


def is_meta(version):
    return lambda f: f.get("type") == "CUSTOM" and f.get("name") == "state_version" and f["value"]["version"] == version


async def test_two_tabs_converge_on_each_others_patches(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "recipe")
    a, b = await Tab(thread, alice).open(), await Tab(thread, alice).open()
    assert a.state == b.state == {}

    await a.patch([{"op": "add", "path": "/recipe", "value": CARBONARA}], base=0)
    ack = await a.until(lambda f: f.get("type") == "state_ack")
    assert ack == {"type": "state_ack", "version": 1, "applied": 1, "ref": "r1"}
    await a.until(is_meta(1))
    await b.until(is_meta(1))

    # b edits from what it now sees; a hears it
    await b.patch([{"op": "replace", "path": "/recipe/title", "value": "Carbonara for two"}], base=b.version, ref="b1")
    await b.until(lambda f: f.get("type") == "state_ack")
    await a.until(is_meta(2))
    await b.until(is_meta(2))
    expected = await sync_to_async(state_services.snapshot)(thread.state_key)
    assert a.state == b.state == expected[0]
    assert expected == ({"recipe": {**CARBONARA, "title": "Carbonara for two"}}, 2)

    # a late tab starts from the same place, with the version to build on
    late = await Tab(thread, alice).open()
    assert late.state == expected[0] and late.version == 2
    for tab in (a, b, late):
        await tab.close()


async def test_a_stale_base_is_refused_with_the_current_snapshot(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "recipe")
    await sync_to_async(state_services.replace)(thread.state_key, {"recipe": CARBONARA}, source="agent")
    await sync_to_async(state_services.replace)(
        thread.state_key, {"recipe": {**CARBONARA, "title": "Newer"}}, source="agent")
    tab = await Tab(thread, alice).open()
    await tab.patch([{"op": "replace", "path": "/recipe/title", "value": "Mine"}], base=1)
    error = await tab.until(lambda f: f.get("type") == "error")
    assert error["code"] == "state_conflict" and error["version"] == 2 and error["ref"] == "r1"
    assert error["snapshot"]["recipe"]["title"] == "Newer"
    assert await sync_to_async(state_services.snapshot)(thread.state_key) == ({"recipe": {**CARBONARA, "title": "Newer"}}, 2)

    await tab.patch([{"op": "replace", "path": "/recipe/title", "value": "Mine"}], base=None)
    error = await tab.until(lambda f: f.get("type") == "error")
    assert error["code"] == "state_version_required"
    await tab.close()


async def test_schema_violations_and_predicted_keys_are_refused(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "recipe")
    tab = await Tab(thread, alice).open()
    await tab.patch([{"op": "add", "path": "/recipe", "value": {**CARBONARA, "skill_level": "Wizard"}}], base=0)
    error = await tab.until(lambda f: f.get("type") == "error")
    assert error["code"] == "state_invalid"
    assert error["errors"][0]["path"] == "/recipe/skill_level"
    assert "does not match the schema" in error["message"]
    await tab.patch([{"op": "remove", "path": "/nothing"}], base=0)
    assert (await tab.until(lambda f: f.get("type") == "error"))["code"] == "state_invalid"
    await tab.patch("not a patch", base=0)
    assert (await tab.until(lambda f: f.get("type") == "error"))["code"] == "state_invalid"
    assert await sync_to_async(state_services.snapshot)(thread.state_key) == ({}, 0)

    # a draft waiting for a decision is not edited behind the reviewer's back
    await sync_to_async(state_services.predict)(thread.state_key, "call_x", {"recipe": CARBONARA})
    await tab.patch([{"op": "replace", "path": "/recipe/title", "value": "Mine"}], base=0)
    error = await tab.until(lambda f: f.get("type") == "error")
    assert error["code"] == "state_provisional" and error["snapshot"] == {"recipe": CARBONARA}
    await tab.close()


# --- RunAgentInput.state ------------------------------------------------------------------------


@pytest.fixture
def no_enqueue(monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)


def post(client, token, thread_id, state, headers=None, **props):
    body = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "state": state, "tools": [], "context": [],
            "forwardedProps": props,
            "messages": [{"id": f"m-{uuid.uuid4()}", "role": "user", "content": "hello"}]}
    return client.post("/agui/recipe/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {token}", **(headers or {}))


@pytest.fixture
def alice_token(demo):
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=demo["alice"])[0].key


def test_run_agent_input_state_is_validated_versioned_and_applied(client, alice_token, no_enqueue, demo):
    thread_id = f"thread-{uuid.uuid4()}"
    key = f"thread:{thread_id}"
    # a thread whose state was never written takes a first state without a version
    resp = post(client, alice_token, thread_id, {"recipe": CARBONARA})
    assert resp.status_code == 200
    assert state_services.snapshot(key) == ({"recipe": CARBONARA}, 1)
    services.Run.objects.filter(thread_id=thread_id).update(status="succeeded")

    changed = {"recipe": {**CARBONARA, "title": "Mine"}}
    # refusals come in-stream (RUN_STARTED, the current state and its version, RUN_ERROR)
    events = sse_events(post(client, alice_token, thread_id, changed, stateVersion=0))  # stale
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "state_conflict"
    assert events[1]["type"] == "STATE_SNAPSHOT" and events[1]["snapshot"] == {"recipe": CARBONARA}
    assert events[2]["name"] == "state_version" and events[2]["value"]["version"] == 1

    resp = post(client, alice_token, thread_id, {"recipe": {**CARBONARA, "cooking_time": "forever"}}, stateVersion=1)
    error = refusal(resp)
    assert error["code"] == "state_invalid" and "/recipe/cooking_time" in error["message"]

    resp = post(client, alice_token, thread_id, changed, stateVersion="one")
    assert refusal(resp)["code"] == "state_invalid"
    assert state_services.snapshot(key) == ({"recipe": CARBONARA}, 1)  # nothing refused got in

    # the same state as the server's, or {} (HttpAgent's default), changes nothing
    for same in ({"recipe": CARBONARA}, {}):
        resp = post(client, alice_token, thread_id, same)
        assert resp.status_code == 200
        services.Run.objects.filter(thread_id=thread_id).update(status="succeeded")
    resp = post(client, alice_token, thread_id, changed, stateVersion=1)
    assert resp.status_code == 200
    assert state_services.snapshot(key) == (changed, 2)


def test_a_stock_client_that_echoes_or_changes_state_without_a_version_is_never_refused(
        client, alice_token, no_enqueue, demo, monkeypatch):
    """Stock AG-UI clients send their last state on every run and no version (forwardedProps is ours)."""
    from agents.agui import endpoint
    from agents.models import Run, Thread

    plans = []
    real_record = endpoint.record
    monkeypatch.setattr(endpoint, "record", lambda *a, **kw: plans.append(real_record(*a, **kw)) or plans[-1])

    def send(state, **headers):
        resp = post(client, alice_token, thread_id, state, headers)
        plan = plans[-1]
        assert resp.status_code == 200 and plan.error is None, plan.error  # the run started
        Run.objects.filter(thread_id=thread_id).update(status="succeeded")
        return [(e.type.value, getattr(e, "name", None), getattr(e, "value", None) or getattr(e, "snapshot", None))
                for e in plan.after_start if e.type.value != "MESSAGES_SNAPSHOT"]

    thread_id = f"thread-{uuid.uuid4()}"
    key = f"thread:{thread_id}"
    send({"recipe": CARBONARA})  # v1
    thread = Thread.objects.get(pk=thread_id)
    theirs = {"recipe": {**CARBONARA, "title": "Theirs"}}
    statesync.replace_user_state(thread, demo["alice"], theirs, 1)  # v2, from the browser or REST
    # an echo of a version the client was sent is not an edit, even an old one
    assert not any(name == "state_not_applied" for _, name, _ in send({"recipe": CARBONARA}))
    assert state_services.snapshot(key) == (theirs, 2)
    # a change made from v1 to what changed since is not applied: the run goes on with the server's state
    told = send({"recipe": {**CARBONARA, "title": "Mine"}})
    assert told[0] == ("STATE_SNAPSHOT", None, theirs)
    assert told[1][1] == "state_not_applied" and told[1][2]["version"] == 2 and "recipe" in told[1][2]["message"]
    assert state_services.snapshot(key) == (theirs, 2)
    # said in the client's language, as the endpoint's other answers are
    told = send({"recipe": {**CARBONARA, "title": "Mine"}}, HTTP_ACCEPT_LANGUAGE="fr")
    assert told[1][2]["message"].startswith("L’état envoyé par votre client n’a pas été appliqué") \
        and "(recipe)" in told[1][2]["message"], told[1][2]["message"]
    # a change made from the current version is applied
    mine = {"recipe": {**theirs["recipe"], "cooking_time": "45 min"}}
    assert send(mine) == []
    assert state_services.snapshot(key) == (mine, 3)


def test_a_change_without_a_version_is_merged_when_it_touches_nothing_changed_since(demo):
    """Nearest recorded version as its base; other keys changed since are kept, not overwritten."""
    thread = services.create_thread(demo["alice"], "banking")  # no state schema
    alice = demo["alice"]
    statesync.replace_user_state(thread, alice, {"a": 1}, 0)  # v1: what the client saw
    statesync.replace_user_state(thread, alice, {"a": 1, "b": 2}, 1)  # v2: someone else's change
    assert statesync.apply_client_state(thread, alice, {"a": 5}, None) == [{"op": "replace", "path": "/a", "value": 5}]
    assert state_services.snapshot(thread.state_key) == ({"a": 5, "b": 2}, 3)
    # an echo of v1, or of v2, changes nothing
    assert statesync.apply_client_state(thread, alice, {"a": 1}, None) == []
    assert statesync.apply_client_state(thread, alice, {"a": 1, "b": 2}, None) == []
    assert state_services.snapshot(thread.state_key)[1] == 3
    # with its version a stale change is still refused (our own clients say what they saw)
    with pytest.raises(state_services.StateConflict):
        statesync.apply_client_state(thread, alice, {"a": 7}, 1)


def test_a_refused_state_on_a_new_thread_leaves_no_thread_behind(client, alice_token, no_enqueue, demo):
    from agents.models import Thread, ThreadIdClaim

    thread_id = f"thread-{uuid.uuid4()}"
    resp = post(client, alice_token, thread_id, {"recipe": {**CARBONARA, "cooking_time": "forever"}})
    assert refusal(resp)["code"] == "state_invalid"
    assert not Thread.objects.filter(pk=thread_id).exists()
    assert not ThreadIdClaim.objects.filter(pk=thread_id).exists()  # nothing was written, so nothing is taken
    assert post(client, alice_token, thread_id, {"recipe": CARBONARA}).status_code == 200  # the id still works


def test_every_refused_state_comes_with_the_current_state_to_retry_from(client, alice_token, no_enqueue, demo):
    """A stock client sends its last state on every run: told only state_invalid, it sent the refused
    state again and every later turn of the chat was refused (only a conflict said the current state)."""
    thread_id = f"thread-{uuid.uuid4()}"
    assert post(client, alice_token, thread_id, {"recipe": CARBONARA}).status_code == 200  # v1
    services.Run.objects.filter(thread_id=thread_id).update(status="succeeded")

    def told(state, **props):
        events = sse_events(post(client, alice_token, thread_id, state, **props))
        assert [e["type"] for e in events] == ["RUN_STARTED", "STATE_SNAPSHOT", "CUSTOM", "RUN_ERROR"], events
        assert events[1]["snapshot"] == {"recipe": CARBONARA}
        assert events[2]["name"] == "state_version" and events[2]["value"] == {"version": 1, "provisional": []}
        return events[-1]["code"]

    assert told({"recipe": {**CARBONARA, "title": ""}}) == "state_invalid"  # the schema's minLength
    assert told({"recipe": CARBONARA}, stateVersion="one") == "state_invalid"
    assert told({"recipe": {**CARBONARA, "title": "x" * 300_000}}) == "state_too_large"
    # the client took the snapshot it was sent: its next turn goes through
    assert post(client, alice_token, thread_id, {"recipe": CARBONARA}).status_code == 200
    assert services.Run.objects.filter(thread_id=thread_id, status="queued").exists()
    # on a new thread the state to retry from is the empty one it starts with
    events = sse_events(post(client, alice_token, f"thread-{uuid.uuid4()}", {"recipe": "soup"}))
    assert [(e["type"], e.get("snapshot", e.get("value"))) for e in events[1:3]] == [
        ("STATE_SNAPSHOT", {}), ("CUSTOM", {"version": 0, "provisional": []})]


async def test_two_tabs_watching_a_predictive_run_end_on_the_committed_state(demo, no_enqueue, monkeypatch, settings):
    from agents.runtime import runner

    monkeypatch.setattr("agents.llm.scripted.state.ARGS_PACE", 0)
    settings.AGUI_STATE_DELTA_INTERVAL = 0
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "recipe")
    a, b = await Tab(thread, alice).open(), await Tab(thread, alice).open()
    run = await sync_to_async(services.start_run)(thread, alice, "I want to make a classic Italian pasta carbonara")
    await sync_to_async(runner.run_agent)(run.pk)
    for tab in (a, b):
        await tab.until(lambda f: f.get("type") == "RUN_FINISHED")
    view = await sync_to_async(state_services.view)(thread.state_key)
    assert a.state == b.state == view[0] == {"recipe": CARBONARA}
    assert a.version == b.version == view[1] == 1
    for tab in (a, b):
        await tab.close()


@pytest.mark.slow
def test_an_agui_client_applies_every_delta_of_a_recipe_run(celery_worker_live, fake_llm, client, alice_token,
                                                           monkeypatch, settings):

    monkeypatch.setattr("agents.llm.scripted.state.ARGS_PACE", 0)
    settings.AGUI_STATE_DELTA_INTERVAL = 0
    thread_id = f"thread-{uuid.uuid4()}"
    events = sse_events(post(client, alice_token, thread_id, {}))  # "hello": the recipe agent's hint, no state
    assert events[-1]["type"] == "RUN_FINISHED"
    body = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": f"m-{uuid.uuid4()}", "role": "user",
                                                "content": "I want to make a classic Italian pasta carbonara"}]}
    resp = client.post("/agui/recipe/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {alice_token}")
    events = sse_events(resp)
    state, deltas = {}, 0
    for e in events:  # what an AG-UI client does with them
        if e["type"] == "STATE_SNAPSHOT":
            state = e["snapshot"]
        elif e["type"] == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, e["delta"])
            deltas += 1
    assert deltas > 10 and state == {"recipe": CARBONARA}
    meta = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "state_version"]
    assert meta[-1] == {"version": 1, "provisional": []}
    # the client sends back what it holds: nothing changes, no version needed
    body = {**body, "runId": f"run-{uuid.uuid4()}", "state": state,
            "messages": [{"id": f"m-{uuid.uuid4()}", "role": "user", "content": "thanks"}]}
    resp = client.post("/agui/recipe/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {alice_token}")
    assert sse_events(resp)[-1]["type"] == "RUN_FINISHED"
    assert state_services.snapshot(f"thread:{thread_id}")[1] == 1


async def test_a_busy_database_answers_a_socket_patch_with_an_error_frame(demo, no_enqueue, monkeypatch):
    """As over HTTP (503 + Retry-After): the socket says so and stays open, instead of a 1011 close."""
    from django.db import OperationalError

    thread = await sync_to_async(services.create_thread)(demo["alice"], "recipe")

    def busy(*args, **kwargs):
        raise OperationalError("database is locked")

    from agents.runtime import statesync

    real = statesync.socket_patch
    monkeypatch.setattr(statesync, "socket_patch", busy)
    tab = await Tab(thread, demo["alice"]).open()
    await tab.patch([{"op": "add", "path": "/recipe", "value": CARBONARA}], base=0, ref="r9")
    error = await tab.until(lambda f: f.get("type") == "error")
    assert error["code"] == "database_busy" and error["ref"] == "r9" and error["retryAfter"] == 1
    monkeypatch.setattr(statesync, "socket_patch", real)
    await tab.patch([{"op": "add", "path": "/recipe", "value": CARBONARA}], base=0, ref="r10")
    assert (await tab.until(lambda f: f.get("type") == "state_ack"))["ref"] == "r10"  # still open and working
    await tab.close()
