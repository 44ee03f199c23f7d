"""Presence follows who may read a request: a reviewer who had a request open when a policy change
routed it to another group kept its viewers' channel, and heard the new group's reviewers open it
(their names) and answered them as if still one of its deciders."""

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User

from approvals import services
from approvals.routing import websocket_urlpatterns as inbox_ws
from tests.inbox_helpers import make_request


def _comm(user):
    c = WebsocketCommunicator(URLRouter(inbox_ws), "/ws/inbox/")
    c.scope["user"] = user
    return c


async def _until(c, kind):
    while True:
        m = await c.receive_json_from(timeout=5)
        if m["type"] == kind:
            return m


@sync_to_async
def _treasury():
    group = Group.objects.create(name="treasury")
    tess = User.objects.create_user("tess", email="tess@example.com")
    tess.groups.add(group)
    return group, tess


@pytest.mark.django_db(transaction=True)
async def test_a_reviewer_whose_group_lost_a_request_hears_nobody_open_it(demo):
    req = await sync_to_async(make_request)("alice", group="finance")
    treasury, tess = await _treasury()
    finn = _comm(demo["finn"])
    assert (await finn.connect())[0]
    await finn.send_json_to({"type": "viewing", "id": req.pk})
    await finn.send_json_to({"type": "ping"})  # frames are taken in order: its answer says finn has joined
    assert (await finn.receive_json_from(timeout=5)) == {"type": "pong"}
    await sync_to_async(services.save_policy)("transfer_money", {
        "mode": "always", "approver_kind": "group", "approver_group": treasury}, demo["admin"])
    assert (await _until(finn, "approval.gone"))["approval"]["id"] == req.pk
    tess_tab = _comm(tess)
    assert (await tess_tab.connect())[0]
    await tess_tab.send_json_to({"type": "viewing", "id": req.pk})
    assert await finn.receive_nothing(timeout=0.5)  # no "tess is viewing"
    assert await tess_tab.receive_nothing(timeout=0.5)  # and finn does not answer "here"
    for c in (finn, tess_tab):
        await c.disconnect()
