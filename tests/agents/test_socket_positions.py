"""A thread socket that says where each frame stands in the stream (?positions=1), so that a client
reconnecting mid-run (a network blip, a laptop waking) resumes from there (?after=): exactly what it
missed, once. Before, its frames carried no stream id, so the `resume` it could send named nothing it
knew: a reconnect was a fresh snapshot plus the live run replayed from its RUN_STARTED, every event
of the run so far sent again."""

import json

import pytest
from ag_ui.core import CustomEvent
from asgiref.sync import sync_to_async

from agents import services
from agents.runtime import events as stream
from tests.agents.test_consumers import communicator

pytestmark = [pytest.mark.django_db(transaction=True)]


def names(frame):
    return [e.get("name", e["type"]) for e in frame["events"]]


async def test_a_reconnect_from_the_last_position_gets_exactly_what_it_missed(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    path = f"/ws/threads/{thread.pk}/?positions=1"
    first = communicator(path, alice)
    assert (await first.connect())[0]
    snapshot = json.loads(await first.receive_from(timeout=10))
    assert names(snapshot)[:2] == ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    assert stream.is_entry_id(snapshot["after"])  # where the snapshot stands
    await sync_to_async(stream.append)(thread.pk, CustomEvent(name="seen", value=1))
    seen = json.loads(await first.receive_from(timeout=10))
    assert names(seen) == ["seen"] and stream.entry_key(seen["after"]) > stream.entry_key(snapshot["after"])
    await first.disconnect()  # the blip: two events are written while nobody listens
    for i in (2, 3):
        await sync_to_async(stream.append)(thread.pk, CustomEvent(name="missed", value=i))

    again = communicator(f"{path}&after={seen['after']}", alice)
    assert (await again.connect())[0]
    resumed = json.loads(await again.receive_from(timeout=10))
    # no snapshot and nothing it had: the two it missed, in order, and where they leave it
    assert [(e["name"], e["value"]) for e in resumed["events"]] == [("missed", 2), ("missed", 3)]
    assert stream.is_entry_id(resumed["after"]) and stream.entry_key(resumed["after"]) > stream.entry_key(seen["after"])
    assert await again.receive_nothing(timeout=0.2)
    await again.disconnect()


async def test_a_position_the_stream_no_longer_continues_gets_the_snapshots(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    await sync_to_async(stream.append)(thread.pk, CustomEvent(name="kept", value=1))
    comm = communicator(f"/ws/threads/{thread.pk}/?positions=1&after=1-0", alice)  # trimmed long ago
    assert (await comm.connect())[0]
    assert names(json.loads(await comm.receive_from(timeout=10)))[0] == "MESSAGES_SNAPSHOT"
    await comm.disconnect()


async def test_a_socket_that_asks_for_no_positions_gets_plain_events(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    comm = communicator(f"/ws/threads/{thread.pk}/", alice)
    assert (await comm.connect())[0]
    assert [e["type"] for e in json.loads(await comm.receive_from(timeout=10))][0] == "MESSAGES_SNAPSHOT"
    await sync_to_async(stream.append)(thread.pk, CustomEvent(name="alone", value=1))
    assert json.loads(await comm.receive_from(timeout=10))["name"] == "alone"
    await comm.disconnect()


class Away:
    """Redis gone, for the notice's own client."""

    def __getattr__(self, name):
        import redis

        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6391. Connection refused.")


async def test_a_resume_from_before_a_notice_lost_to_a_redis_outage_gets_the_snapshots(demo, monkeypatch):
    """The notice (a card, a state change) was never on the stream: what followed the position lacks it,
    and a socket closed before the outage never got the 4011 that sends the others to the snapshots."""
    from agents.models import Thread
    from agents.runtime import notices

    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    path = f"/ws/threads/{thread.pk}/?positions=1"
    first = communicator(path, alice)
    assert (await first.connect())[0]
    seen = json.loads(await first.receive_from(timeout=10))["after"]
    await first.disconnect()
    with monkeypatch.context() as outage:
        outage.setattr(stream, "brief_client", lambda: Away())
        assert await sync_to_async(notices.tell)(thread.pk, CustomEvent(name="lost", value=1), what="a card") is None
    await sync_to_async(stream.append)(thread.pk, CustomEvent(name="after", value=2))  # Redis back

    again = communicator(f"{path}&after={seen}", alice)
    assert (await again.connect())[0]
    assert names(json.loads(await again.receive_from(timeout=10)))[:2] == ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    await again.disconnect()

    # a loss well before the position: what followed it is whole, and the resume is one
    from datetime import timedelta

    from django.utils import timezone

    await sync_to_async(Thread.objects.filter(pk=thread.pk).update)(notice_lost_at=timezone.now() - timedelta(minutes=5))
    later = await sync_to_async(stream.append)(thread.pk, CustomEvent(name="seen", value=3))
    await sync_to_async(stream.append)(thread.pk, CustomEvent(name="next", value=4))
    resumed = communicator(f"{path}&after={later}", alice)
    assert (await resumed.connect())[0]
    assert names(json.loads(await resumed.receive_from(timeout=10))) == ["next"]
    await resumed.disconnect()
