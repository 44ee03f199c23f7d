"""One message to several groups (agui_project/channel_groups.py) arrives as channels_redis's own
group_send would deliver it, on the real Redis: to every member once, past lapsed memberships,
within each channel's capacity; an inbox notice to groups a socket is in twice arrives once."""

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels_redis.core import RedisChannelLayer
from django.conf import settings

from agui_project.channel_groups import group_send_many
from approvals import notify

GROUPS = ["test.staff", "test.user.7", "test.group.3"]
MESSAGE = {"type": "inbox.notice", "notice": {"type": "approval.decided", "approval": {"id": 5, "status": "approved"}}}


def _layer(**config):
    return RedisChannelLayer(hosts=[{"address": settings.REDIS_URL}], prefix=f"asgi-test-{time.time_ns()}", **config)


async def _nothing_more(layer, channel):
    """Nothing else was delivered: a marker sent now is the channel's next message."""
    await layer.send(channel, {"type": "marker"})
    assert await asyncio.wait_for(layer.receive(channel), 5) == {"type": "marker"}


async def _members(layer, groups_by_channel):
    channels = {}
    for name, groups in groups_by_channel.items():
        channels[name] = await layer.new_channel()
        for group in groups:
            await layer.group_add(group, channels[name])
    return channels


async def test_every_member_of_the_groups_gets_the_message_once_as_group_send_delivers_it():
    layer = _layer()
    try:
        channels = await _members(layer, {"staff": [GROUPS[0]], "requester and staff": GROUPS[:2],
                                          "approver": [GROUPS[2]], "elsewhere": ["test.other"]})
        await group_send_many(layer, GROUPS, MESSAGE)
        for name in ("staff", "requester and staff", "approver"):
            assert await asyncio.wait_for(layer.receive(channels[name]), 5) == MESSAGE
            await _nothing_more(layer, channels[name])
        await _nothing_more(layer, channels["elsewhere"])
        # what channels_redis's own group_send leaves for a member is the same message
        await layer.group_send("test.other", MESSAGE)
        assert await asyncio.wait_for(layer.receive(channels["elsewhere"]), 5) == MESSAGE
    finally:
        await layer.flush()


async def test_a_lapsed_membership_gets_nothing_and_is_dropped():
    layer = _layer(group_expiry=60)
    try:
        channels = await _members(layer, {"live": [GROUPS[0]], "lapsed": [GROUPS[0]]})
        key = layer._group_key(GROUPS[0])
        # joined 61 s ago and never renewed (channels_redis scores a member by when it joined)
        await layer.connection(layer.consistent_hash(GROUPS[0])).zadd(key, {channels["lapsed"]: time.time() - 61})
        await group_send_many(layer, GROUPS, MESSAGE)
        assert await asyncio.wait_for(layer.receive(channels["live"]), 5) == MESSAGE
        await _nothing_more(layer, channels["lapsed"])
        members = await layer.connection(layer.consistent_hash(GROUPS[0])).zrange(key, 0, -1)
        assert [m.decode() for m in members] == [channels["live"]]
    finally:
        await layer.flush()


async def test_a_channel_at_its_capacity_is_skipped_and_the_others_still_get_it():
    """Named channels: a process's own channels (new_channel) share one Redis key, and its capacity."""
    layer = _layer(capacity=1)
    try:
        for channel, group in (("test.full", GROUPS[0]), ("test.free", GROUPS[1])):
            await layer.group_add(group, channel)
        await layer.send("test.full", {"type": "earlier"})
        await group_send_many(layer, GROUPS, MESSAGE)
        assert await asyncio.wait_for(layer.receive("test.free"), 5) == MESSAGE
        assert await asyncio.wait_for(layer.receive("test.full"), 5) == {"type": "earlier"}
        await _nothing_more(layer, "test.full")
    finally:
        await layer.flush()


async def test_another_channel_layer_gets_one_group_send_per_group():
    layer = InMemoryChannelLayer()
    channels = await _members(layer, {"staff": [GROUPS[0]], "approver": [GROUPS[2]]})
    await group_send_many(layer, [*GROUPS, GROUPS[0]], MESSAGE)
    for channel in channels.values():
        assert await asyncio.wait_for(layer.receive(channel), 5) == MESSAGE
        await _nothing_more(layer, channel)


@pytest.mark.django_db
def test_an_inbox_notice_reaches_a_socket_in_two_of_its_groups_once(demo):
    """The requester is staff here: their inbox socket is in both groups the notice goes to."""
    from tests.helpers import transfer_request

    request = transfer_request(demo["alice"])
    layer = get_channel_layer()

    async def subscribe():
        channel = await layer.new_channel()
        await layer.group_add(notify.STAFF_GROUP, channel)
        await layer.group_add(notify.group_for_user(request.requester_id), channel)
        return channel

    channel = async_to_sync(subscribe)()
    notify.inbox_notice("decided", request).result(timeout=10)

    async def received():
        got = await asyncio.wait_for(layer.receive(channel), 5)
        await _nothing_more(layer, channel)
        return got

    assert async_to_sync(received)()["notice"]["approval"]["id"] == request.pk
