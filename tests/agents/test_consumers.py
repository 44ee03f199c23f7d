"""The thread and inbox WebSockets through the real ASGI stack (origin check, session auth)."""

import json
import logging
import socket

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from agents import services
from agents.agui import custom_events
from agents.routing import websocket_urlpatterns as thread_ws
from agents.runtime import events, runner
from approvals.routing import websocket_urlpatterns as inbox_ws
from tests.helpers import next_event, transfer_request

pytestmark = [pytest.mark.django_db(transaction=True)]
PROMPT = "Transfer $500 from account 1234567890 to account 0987654321"


def communicator(path, user):
    comm = WebsocketCommunicator(URLRouter(thread_ws + inbox_ws), path)
    comm.scope["user"] = user
    return comm


async def receive_until(comm, predicate, limit=200):
    seen = []
    for _ in range(limit):
        event = await next_event(comm)
        seen.append(event)
        if predicate(event):
            return seen
    raise AssertionError("event never came")


@pytest.fixture
def redis_away(settings, monkeypatch):
    """Redis stopped, for the sockets: the channel layer and the stream reader point at a port that is
    bound but not listening, so every connection is refused (the port stays ours while the test runs)."""
    from agents.runtime import events as stream

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{closed.getsockname()[1]}/0"
        layer = settings.CHANNEL_LAYERS["default"]
        # a changed CHANNEL_LAYERS drops channels' cached layer, so the next consumer gets this one
        settings.CHANNEL_LAYERS = {"default": {**layer, "CONFIG": {**layer["CONFIG"], "hosts": [
            {"address": dead, "socket_timeout": None}]}}}
        settings.REDIS_URL = dead
        monkeypatch.setattr(stream, "_async_clients", {})  # the stream's next client is made for `dead`
        yield


async def closed_cleanly(comm, caplog):
    """The close frame's code; the consumer then ends by itself, having logged one warning and no
    traceback (an exception escaping into Daphne is its "Exception inside application", a 500 at the
    handshake)."""
    closed = await comm.receive_output(timeout=10)
    assert closed["type"] == "websocket.close", closed
    await comm.disconnect()  # the client's answer; re-raises whatever escaped the consumer
    assert comm.future.done() and not comm.future.cancelled()  # it stopped, it was not stopped
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "Redis" in warnings[0], warnings
    return closed["code"]


@pytest.fixture
def no_enqueue(monkeypatch):
    """The test drives the runner itself, so start_run must not also hand the run to Celery."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)


async def test_thread_socket_streams_a_run_in_agui_order(demo, no_enqueue):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    comm = communicator(f"/ws/threads/{thread.pk}/", alice)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await receive_until(comm, lambda e: e["type"] == "CUSTOM" and e["name"] == "approvals")
    assert [e["type"] for e in snapshot] == ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "CUSTOM"]

    run = await sync_to_async(services.start_run)(thread, alice, PROMPT)
    await sync_to_async(runner.run_agent)(run.pk)
    events = await receive_until(comm, lambda e: e["type"] == "RUN_FINISHED")
    types = [e["type"] for e in events]
    assert types[:3] == ["RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START"]
    assert types.index("TEXT_MESSAGE_END") < types.index("TOOL_CALL_START") < types.index("TOOL_CALL_END")
    assert types[-3:] == ["CUSTOM", "CUSTOM", "RUN_FINISHED"]
    assert events[-3]["name"] == "approval_request" and events[-3]["value"]["approver"]["group"] == "finance"
    # finance decides: information for the requester (who decides), not an interrupt she must answer
    assert events[-2]["name"] == "approval_status" and events[-2]["value"]["decidedBy"] == "finance"
    assert "outcome" not in events[-1]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("I'll transfer 500.00 USD")
    assert all(isinstance(e["timestamp"], int) for e in events)
    assert not any(v is None for e in events for v in e.values())
    await comm.disconnect()

    # a late subscriber gets the same conversation from the snapshot
    late = communicator(f"/ws/threads/{thread.pk}/", alice)
    assert (await late.connect())[0]
    snap = await next_event(late)
    assert snap["type"] == "MESSAGES_SNAPSHOT"
    assert [m["role"] for m in snap["messages"]] == ["user", "assistant"]
    assert snap["messages"][1]["toolCalls"][0]["function"]["name"] == "transfer_money"
    state = await next_event(late)
    assert state["type"] == "STATE_SNAPSHOT"
    info = await next_event(late)  # when each message was written
    assert info["name"] == "message_info" and set(info["value"]["messages"]) == {m["id"] for m in snap["messages"]}
    approvals = await next_event(late)
    assert approvals["value"]["approvals"][0]["status"] == "pending"
    assert approvals["value"]["approvals"][0]["canDecide"] is False  # finance decides, not alice
    await late.disconnect()


async def refused_with(comm):
    """The close code of a refused socket: accepted first, since a socket refused at its handshake
    reaches a browser as 1006 only (Daphne answers HTTP 403), and the chat page retried for ever."""
    connected, _ = await comm.connect()
    assert connected
    closed = await comm.receive_output(timeout=5)
    assert closed["type"] == "websocket.close", closed
    await comm.send_to(text_data='{"type": "resume", "after": "0"}')  # nothing more happens
    assert await comm.receive_nothing(timeout=0.2)
    return closed["code"]


async def test_thread_socket_refuses_anonymous_and_other_users(demo):
    thread = await sync_to_async(services.create_thread)(demo["bob"], "banking")
    assert await refused_with(communicator(f"/ws/threads/{thread.pk}/", AnonymousUser())) == 4401
    assert await refused_with(communicator(f"/ws/threads/{thread.pk}/", demo["alice"])) == 4403


async def test_a_resume_position_redis_would_refuse_is_answered_and_the_socket_goes_on(demo, caplog):
    """It was taken for a Redis outage: closed with 4011 and logged as one."""
    thread = await sync_to_async(services.create_thread)(demo["alice"], "banking")
    comm = communicator(f"/ws/threads/{thread.pk}/", demo["alice"])
    assert (await comm.connect())[0]
    snapshot = await comm.receive_json_from(timeout=10)  # the snapshots, one frame
    assert snapshot[0]["type"] == "MESSAGES_SNAPSHOT"
    with caplog.at_level(logging.WARNING):
        for after in ("abc", "-1", "+", "1-2-3", "18446744073709551616-0", "\u0661-0", 5, None):
            await comm.send_json_to({"type": "resume", "after": after})
            reply = await comm.receive_json_from(timeout=5)
            assert reply["type"] == "error" and reply["code"] == "invalid_position", (after, reply)
        await comm.send_to(bytes_data=b"\x89PNG\r\n")  # a binary frame is answered too (it was ignored)
        reply = await comm.receive_json_from(timeout=5)
        assert reply["code"] == "invalid_frame" and "binary" in reply["message"]
        # a frame of a type the socket does not take (AG-UI's STATE_DELTA) is answered, not ignored
        await comm.send_json_to({"type": "STATE_DELTA", "delta": [], "ref": "r1"})
        reply = await comm.receive_json_from(timeout=5)
        assert reply["code"] == "unknown_type" and reply["ref"] == "r1" and "state_patch" in reply["message"]
    assert "Redis" not in caplog.text
    # still open: a valid position resumes, and what is appended after it arrives
    await comm.send_json_to({"type": "resume", "after": "0-0"})
    await sync_to_async(events.append)(thread.pk, custom_events.ignored_messages([{"id": "m", "role": "system"}]))
    got = await comm.receive_json_from(timeout=10)
    assert any(e.get("name") == "ignored_messages" for e in (got if isinstance(got, list) else [got]))
    await comm.disconnect()


def _names(frame):
    return [e.get("name") or e["type"] for e in (frame if isinstance(frame, list) else [frame])]


@pytest.mark.parametrize("gone", ["past its end", "trimmed"])
async def test_a_resume_the_stream_cannot_continue_starts_the_socket_over(demo, gone):
    """A resume after a position later than any entry read nothing until the clock got there (the
    socket deaf); one whose followers were trimmed from the buffer went on without them. Either
    way the socket now starts over, snapshots first, as a new one, and live events follow."""
    thread = await sync_to_async(services.create_thread)(demo["alice"], "banking")
    notice = custom_events.ignored_messages([{"id": "m", "role": "system"}])
    seen = await sync_to_async(events.append)(thread.pk, notice)
    await sync_to_async(events.append)(thread.pk, notice)
    comm = communicator(f"/ws/threads/{thread.pk}/", demo["alice"])
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)  # the snapshots
    if gone == "trimmed":
        await sync_to_async(events.redis_client().xtrim)(events.stream_key(thread.pk), maxlen=1, approximate=False)
        after = seen
    else:
        after = f"{2 ** 64 - 1}-0"
    await comm.send_json_to({"type": "resume", "after": after})
    assert _names(await comm.receive_json_from(timeout=10))[0] == "MESSAGES_SNAPSHOT"
    await sync_to_async(events.append)(thread.pk, custom_events.state_version(3, {}))
    assert _names(await comm.receive_json_from(timeout=10)) == ["state_version"]
    await comm.disconnect()


async def test_sockets_check_origin(demo, settings):
    from agui_project.asgi import application

    thread = await sync_to_async(services.create_thread)(demo["alice"], "banking")
    comm = WebsocketCommunicator(application, f"/ws/threads/{thread.pk}/", headers=[(b"origin", b"http://evil.example")])
    connected, _ = await comm.connect()
    assert not connected


async def test_inbox_socket_hears_new_requests_for_its_groups(demo):
    finn = communicator("/ws/inbox/", demo["finn"])
    assert (await finn.connect())[0]
    rita = communicator("/ws/inbox/", demo["rita"])
    assert (await rita.connect())[0]
    assert await refused_with(communicator("/ws/inbox/", demo["bob"])) == 4403
    assert await refused_with(communicator("/ws/inbox/", AnonymousUser())) == 4401

    req = await sync_to_async(transfer_request)(demo["alice"])
    notice = await finn.receive_json_from(timeout=10)
    assert notice["type"] == "approval.requested" and notice["approval"]["id"] == req.pk
    assert await rita.receive_nothing(timeout=0.3)  # not in finance
    await finn.disconnect()
    await rita.disconnect()


async def test_snapshot_tells_a_reconnecting_client_that_the_latest_run_failed(demo, no_enqueue):
    """The RUN_ERROR may be long gone from the stream (expired, or Redis restarted): the snapshot
    still says the latest run failed, so the chat can show why and offer Retry."""
    from agents.models import Run

    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    run = await sync_to_async(services.start_run)(thread, alice, "hello")
    message = "The live connection (Redis) was lost for too long, so the run stopped. Retry it."
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(status="failed", error=message,
                                                              error_code="stream_unavailable")
    comm = communicator(f"/ws/threads/{thread.pk}/", alice)
    assert (await comm.connect())[0]
    seen = await receive_until(comm, lambda e: e.get("name") == "run_error")
    assert seen[-1]["value"] == {"runId": run.pk, "code": "stream_unavailable", "message": message}
    await comm.disconnect()

    # a later, successful run: nothing to report any more
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(status="succeeded", error="", error_code="")
    comm = communicator(f"/ws/threads/{thread.pk}/", alice)
    assert (await comm.connect())[0]
    seen = await receive_until(comm, lambda e: e.get("name") == "approvals")
    assert not any(e.get("name") == "run_error" for e in seen)
    await comm.disconnect()


async def test_events_ready_together_go_as_one_frame(demo):
    """A fresh socket's snapshots are one frame, and so is a burst read from the stream at once (an
    array, in stream order); an event on its own is a plain object. With many sockets on a thread
    the cost is per frame (README "Performance")."""
    from ag_ui.core import CustomEvent

    from agents.runtime import events as stream
    from agui_project.redis_client import redis_client

    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    comm = communicator(f"/ws/threads/{thread.pk}/", alice)
    assert (await comm.connect())[0]
    snapshot = json.loads(await comm.receive_from(timeout=10))
    assert [e["type"] for e in snapshot] == ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "CUSTOM"]
    assert snapshot[-1]["name"] == "approvals"

    def write_burst():  # as the run's writer does (events.EventStream): one MULTI/EXEC, read back at once
        pipe = redis_client().pipeline(transaction=True)
        stream._xadd_all(pipe, stream.stream_key(thread.pk),
                         [stream.encode(CustomEvent(name="burst", value=i)) for i in range(3)])
        pipe.execute()

    await sync_to_async(write_burst)()
    frame = json.loads(await comm.receive_from(timeout=10))
    assert [(e["name"], e["value"]) for e in frame] == [("burst", 0), ("burst", 1), ("burst", 2)]
    await sync_to_async(stream.append)(thread.pk, CustomEvent(name="alone", value=3))
    assert json.loads(await comm.receive_from(timeout=10))["name"] == "alone"
    await comm.disconnect()


def test_frames_keep_order_and_are_bounded(monkeypatch):
    from agents import consumers

    monkeypatch.setattr(consumers, "FRAME_MAX_CHARS", 40)
    small = [json.dumps({"n": i}) for i in range(5)]  # 8 characters each
    big = json.dumps({"n": "x" * 60})
    out = list(consumers.frames([*small, big, small[0]]))
    assert [json.loads(f) for f in out] == [
        [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}], {"n": 4}, {"n": "x" * 60}, {"n": 0}]
    assert all(len(f) <= 40 for f in out if f != big)  # only an event larger than a frame is, alone
    assert list(consumers.frames([])) == []


async def test_a_stream_that_cannot_be_read_closes_the_socket_with_a_code_daphne_sends(demo, monkeypatch):
    """Redis away: the socket closes so that the page reconnects (and gets a fresh snapshot). Daphne's
    autobahn refuses application close codes other than 1000 and 3000-4999 (it raised on 1011)."""
    import redis

    from agents.runtime import events as stream

    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")

    async def unreachable(*args, **kwargs):
        raise redis.ConnectionError("Redis went away")

    comm = communicator(f"/ws/threads/{thread.pk}/", alice)
    assert (await comm.connect())[0]
    await comm.receive_from(timeout=10)  # the snapshot
    monkeypatch.setattr(stream, "read", unreachable)
    await comm.send_to(text_data=json.dumps({"type": "resume", "after": "0-0"}))  # the pump reads again
    closed = await comm.receive_output(timeout=10)
    assert closed["type"] == "websocket.close"
    assert closed["code"] == 1000 or 3000 <= closed["code"] <= 4999, closed
    assert closed["code"] not in (4401, 4403)  # the page retries on any other code


async def test_a_thread_socket_opening_while_redis_is_away_is_closed_with_4011(demo, redis_away, caplog):
    """Not a failed handshake (a 500, the channel layer's ConnectionError escaping into Daphne): the
    socket is accepted and closed with 4011 at once, so the page sees the code and retries with backoff."""
    thread = await sync_to_async(services.create_thread)(demo["alice"], "banking")
    caplog.clear()  # the new thread's stream could not be dropped either (thread_ids.drop_stream): said apart
    comm = communicator(f"/ws/threads/{thread.pk}/", demo["alice"])
    with caplog.at_level(logging.INFO):
        assert await comm.connect(timeout=10) == (True, None)
        assert await closed_cleanly(comm, caplog) == 4011


async def test_the_inbox_socket_opening_while_redis_is_away_is_closed_with_4011(demo, redis_away, caplog):
    finn = communicator("/ws/inbox/", demo["finn"])
    with caplog.at_level(logging.INFO):
        assert await finn.connect(timeout=10) == (True, None)
        assert await closed_cleanly(finn, caplog) == 4011


async def test_a_snapshot_that_cannot_be_read_closes_with_4011_and_a_warning(demo, monkeypatch, caplog):
    """Redis gone between the accept and the snapshot's stream position: a warning, not a traceback."""
    import redis

    from agents.runtime import events as stream

    async def unreachable(*args, **kwargs):
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setattr(stream, "last_id", unreachable)
    thread = await sync_to_async(services.create_thread)(demo["alice"], "banking")
    comm = communicator(f"/ws/threads/{thread.pk}/", demo["alice"])
    with caplog.at_level(logging.INFO):
        assert await comm.connect(timeout=10) == (True, None)
        assert await closed_cleanly(comm, caplog) == 4011


async def test_an_open_inbox_socket_losing_redis_closes_with_4011(demo, monkeypatch, caplog):
    """Past the handshake too: Redis gone under a presence frame is a 4011 close, not an exception
    into Daphne (which closed with 1011)."""
    import redis
    from channels_redis.core import RedisChannelLayer

    req = await sync_to_async(transfer_request)(demo["alice"])  # before finn listens: no notice first
    finn = communicator("/ws/inbox/", demo["finn"])
    assert (await finn.connect())[0]

    async def unreachable(*args, **kwargs):
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setattr(RedisChannelLayer, "group_add", unreachable)
    with caplog.at_level(logging.INFO):
        await finn.send_json_to({"type": "viewing", "id": req.pk})
        assert await closed_cleanly(finn, caplog) == 4011


async def test_a_ping_is_answered_on_both_sockets_whatever_else_they_carry(demo):
    """The pages' keep-alive (net.js aguiKeepAlive) asks a socket that went quiet whether it still reaches
    the server: a pong, with the ping's ref, and the socket goes on (a ping was an unknown_type error,
    which a page could not tell from a live answer either)."""
    thread = await sync_to_async(services.create_thread)(demo["alice"], "banking")
    chat = communicator(f"/ws/threads/{thread.pk}/", demo["alice"])
    assert (await chat.connect())[0]
    assert (await chat.receive_json_from(timeout=10))[0]["type"] == "MESSAGES_SNAPSHOT"
    await chat.send_json_to({"type": "ping", "ref": "p1"})
    assert await chat.receive_json_from(timeout=5) == {"type": "pong", "ref": "p1"}
    await chat.send_json_to({"type": "ping"})
    assert await chat.receive_json_from(timeout=5) == {"type": "pong"}
    await sync_to_async(events.append)(thread.pk, custom_events.ignored_messages([{"id": "m", "role": "system"}]))
    got = await chat.receive_json_from(timeout=10)
    assert any(e.get("name") == "ignored_messages" for e in (got if isinstance(got, list) else [got]))
    await chat.disconnect()

    inbox = communicator("/ws/inbox/", demo["finn"])
    assert (await inbox.connect())[0]
    await inbox.send_json_to({"type": "ping", "ref": 7})
    assert await inbox.receive_json_from(timeout=5) == {"type": "pong", "ref": 7}
    await inbox.send_json_to({"type": "view"})
    reply = await inbox.receive_json_from(timeout=5)
    assert reply["code"] == "unknown_type" and "ping" in reply["message"]
    await inbox.disconnect()
