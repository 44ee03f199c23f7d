"""A deleted thread's id is never handed to anyone again, and its stream goes with it (issue 13, finding 7)."""

import json
import uuid

import pytest
from ag_ui.core import ToolCallResultEvent
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents import services
from agents.models import Thread, ThreadIdClaim
from agents.routing import websocket_urlpatterns
from agents.runtime import events
from agents.thread_ids import ThreadIdTaken
from state import services as state_services
from state.models import SharedState, StateChange
from tests.agents.test_agui import refusal
from tests.agents.test_consumers import refused_with

pytestmark = [pytest.mark.django_db(transaction=True)]


def fresh(name):
    return f"{name}-{uuid.uuid4()}"  # streams live in a Redis other test runs share


SECRET = "Transferred 5000.00 USD from 1234567890; balance 12.00"


def agui_post(client, thread_id, token, run_id):
    body = {"threadId": thread_id, "runId": run_id, "messages": [{"id": f"m-{run_id}", "role": "user", "content": "hi"}],
            "state": {}, "tools": [], "context": [], "forwardedProps": {}}
    return client.post("/agui/banking/", json.dumps(body), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def token(user):
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


def alices_deleted_thread(api, thread_id):
    """alice's chat with a tool result on its stream and a state, deleted through the REST API."""
    assert api("alice").post("/api/threads/", {"id": thread_id, "agent": "banking"}, format="json").status_code == 201
    events.append(thread_id, ToolCallResultEvent(message_id="m1", tool_call_id="call_1", content=SECRET))
    state_services.replace(f"thread:{thread_id}", {"balance": 12}, source=StateChange.Source.USER)
    assert events.last_id_sync(thread_id) != "0-0"
    assert api("alice").delete(f"/api/threads/{thread_id}/").status_code == 204


def test_deleting_a_thread_drops_its_stream_and_state(api, demo):
    thread_id = fresh("chat-x")
    alices_deleted_thread(api, thread_id)
    assert not events.redis_client().exists(events.stream_key(thread_id))
    assert not SharedState.objects.filter(key=f"thread:{thread_id}").exists()
    assert ThreadIdClaim.objects.get(pk=thread_id).released_at is not None


def test_a_deleted_threads_id_is_not_given_to_anyone(api, client, demo):
    thread_id = fresh("chat-x")
    alices_deleted_thread(api, thread_id)
    # REST: bob (and alice too) are refused the id
    for user in ("bob", "alice"):
        resp = api(user).post("/api/threads/", {"id": thread_id, "agent": "banking"}, format="json")
        assert resp.status_code == 400 and "id" in resp.json(), resp.json()
    # AG-UI: the client-chosen threadId is refused before anything is written
    resp = agui_post(client, thread_id, token(demo["bob"]), fresh("run-bob"))
    assert refusal(resp)["code"] == "thread_id_used"
    assert not Thread.objects.filter(pk=thread_id).exists()
    assert not events.redis_client().exists(events.stream_key(thread_id))


def test_a_live_chat_of_someone_else_is_answered_as_a_deleted_chats_id(api, client, demo, monkeypatch):
    """An existence oracle: bob's POST on alice's live chat answered "this thread belongs to someone
    else" (forbidden), on an id nobody holds it made his chat, on a deleted chat's id thread_id_used.
    Her live chat's id now reads as a deleted one's: that an id is used, never whose or that it lives."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)  # the run is not what is tested
    live, deleted = fresh("chat-live"), fresh("chat-gone")
    assert api("alice").post("/api/threads/", {"id": live, "agent": "banking"}, format="json").status_code == 201
    alices_deleted_thread(api, deleted)
    answers = []
    for thread_id in (live, deleted):
        error = refusal(agui_post(client, thread_id, token(demo["bob"]), fresh("run-bob")))
        answers.append((error["code"], error["message"]))
        # the REST API and the socket already answer both alike: 404, 4403
        assert api("bob").get(f"/api/threads/{thread_id}/").status_code == 404
        assert api("bob").get(f"/api/threads/{thread_id}/messages/").status_code == 404
    assert answers[0] == answers[1] and answers[0][0] == "thread_id_used", answers
    assert not Thread.objects.filter(owner=demo["bob"]).exists()
    # the owner's use is unchanged: her POST on her chat starts a run
    assert agui_post(client, live, token(demo["alice"]), fresh("run-alice")).status_code == 200
    assert Thread.objects.get(pk=live).runs.count() == 1


async def test_bob_cannot_replay_alices_events_on_a_reused_id(api, demo):
    thread_id = fresh("chat-y")
    await sync_to_async(alices_deleted_thread)(api, thread_id)
    with pytest.raises(ThreadIdTaken):  # bob cannot get the id in any way ...
        await sync_to_async(services.create_thread)(demo["bob"], "banking", thread_id=thread_id)
    # ... so his socket on it is refused, and a resume from 0-0 has nothing of alice's to give
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/threads/{thread_id}/")
    comm.scope["user"] = demo["bob"]
    assert await refused_with(comm) == 4403  # accepted only to be closed: nothing of the stream goes
    assert await sync_to_async(events.last_id_sync)(thread_id) == "0-0"


def test_a_thread_deleted_another_way_keeps_its_id_too(demo):
    """The admin, or the owner's account going away, deletes through the ORM: the id stays used."""
    Thread.objects.create(id="made-directly", owner=demo["alice"], agent="banking")
    demo["alice"].delete()
    with pytest.raises(ThreadIdTaken, match="made-directly"):
        services.create_thread(demo["bob"], "banking", thread_id="made-directly")
    assert ThreadIdClaim.objects.filter(pk="made-directly", released_at__isnull=False).exists()


def test_two_creators_of_one_new_id_cannot_both_have_it(demo):
    services.create_thread(demo["alice"], "banking", thread_id="fresh")
    with pytest.raises(ThreadIdTaken, match="fresh"):
        services.create_thread(demo["bob"], "banking", thread_id="fresh")
    assert Thread.objects.get(pk="fresh").owner == demo["alice"]


# --- what a client-chosen id may hold ---------------------------------------------------------
# Every page and endpoint names a thread by its id in the path: an id the routes cannot match made
# a chat its owner could neither read nor delete ("a/b" was taken by AG-UI; REST's router took no ".").

ADDRESSABLE = ["chat.v2.{}", "user@example.com:{}", "a b+c%d~{}", "café-{}", "x?y#z-{}", "{}..", "[{}]"]


@pytest.mark.parametrize("shape", ADDRESSABLE)
def test_every_id_agui_takes_is_reachable_on_every_route(api, client, demo, shape):
    from urllib.parse import quote

    thread_id, alice = shape.format(uuid.uuid4().hex[:8]), demo["alice"]
    assert agui_post(client, thread_id, token(alice), fresh("run")).status_code == 200
    Thread.objects.get(pk=thread_id)
    path = quote(thread_id, safe="")
    assert api("alice").get(f"/api/threads/{path}/").json()["id"] == thread_id
    assert [m["content"] for m in api("alice").get(f"/api/threads/{path}/messages/").json()] == ["hi"]
    assert api("alice").get(f"/api/threads/{path}/state/").status_code == 200
    client.force_login(alice)
    page = client.get(f"/chat/{path}/")
    assert page.status_code == 200
    # the chat's socket and the thread list name it encoded, as one path segment
    assert f'"/ws/threads/{path}/"'.encode() in page.content
    assert f'href="/chat/{quote(thread_id, safe="+:@~")}/"'.encode() in page.content
    run = Thread.objects.get(pk=thread_id).runs.get()
    assert api("alice").get(f"/api/runs/{quote(run.pk, safe='')}/").json()["id"] == run.pk
    run.status = run.Status.SUCCEEDED  # no worker here: the run would keep the thread from deletion
    run.save(update_fields=["status"])
    assert api("alice").delete(f"/api/threads/{path}/").status_code == 204
    assert not Thread.objects.filter(pk=thread_id).exists()


@pytest.mark.parametrize("bad", ["a/b", "a\\b", ".", ".."])
def test_an_id_no_route_can_name_is_refused_where_it_enters(api, client, demo, bad):
    resp = agui_post(client, bad, token(demo["alice"]), fresh("run"))
    assert resp.status_code == 422 and "web address" in resp.json()["errors"]["threadId"][0]
    resp = agui_post(client, fresh("t"), token(demo["alice"]), bad)
    assert resp.status_code == 422 and "web address" in resp.json()["errors"]["runId"][0]
    resp = api("alice").post("/api/threads/", {"id": bad, "agent": "banking"}, format="json")
    assert resp.status_code == 400 and "id" in resp.json().get("errors", resp.json()), resp.content
    assert not Thread.objects.exists()


def test_a_new_thread_starts_with_an_empty_stream_whatever_redis_holds(api, demo):
    """A database restored from a backup has no claim of the chats made after it, while Redis
    still holds their streams (AGUI_STREAM_TTL, a day): an id of such a chat, taken anew by
    someone else, replayed its first owner's events (a tool's result) to the new owner."""
    from django.db import connection

    thread_id = fresh("restored")
    assert api("alice").post("/api/threads/", {"id": thread_id, "agent": "banking"}, format="json").status_code == 201
    events.append(thread_id, ToolCallResultEvent(message_id="m1", tool_call_id="call_1", content=SECRET))
    with connection.cursor() as cur:  # the restore: rows gone as if never written, Redis untouched
        cur.execute("DELETE FROM agents_thread WHERE id = %s", [thread_id])
        cur.execute("DELETE FROM agents_threadidclaim WHERE id = %s", [thread_id])
    assert api("bob").post("/api/threads/", {"id": thread_id, "agent": "banking"}, format="json").status_code == 201
    entries = events.redis_client().xrange(events.stream_key(thread_id))
    assert not any(SECRET in json.dumps(str(fields)) for _, fields in entries)
