"""A policy change routed a paused call's request to another group: the chat's card and its "waiting
for" line kept saying the former group until a reload. The chat now hears the new deciders."""

import pytest
from django.contrib.auth.models import Group

from agents import services
from approvals import services as approval_services
from tests.conftest import stream_events
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def test_the_chat_hears_who_decides_after_a_policy_change(demo, django_capture_on_commit_callbacks):
    thread = services.create_thread(demo["alice"], "banking", title="Transfer $500")
    request = make_request("alice", thread=thread.pk, group="finance")
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.save_policy("transfer_money", {
            "mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name="support")},
            demo["admin"])
    told = [e["value"] for e in stream_events(thread.pk)
            if e["type"] == "CUSTOM" and e["name"] == "approval_request"]
    assert [(v["approvalId"], v["approver"], v["status"]) for v in told] == [
        (request.pk, {"kind": "group", "group": "support"}, "pending")]


def test_an_outside_agents_request_routed_elsewhere_tells_no_chat(demo, django_capture_on_commit_callbacks):
    thread = services.create_thread(demo["alice"], "banking", title="Not this one")
    request = make_request("alice", thread=thread.pk, group="finance")
    type(request).objects.filter(pk=request.pk).update(tool_call_ref="")  # as an outside agent's request is
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.save_policy("transfer_money", {
            "mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name="support")},
            demo["admin"])
    assert not [e for e in stream_events(thread.pk) if e["type"] == "CUSTOM"]
