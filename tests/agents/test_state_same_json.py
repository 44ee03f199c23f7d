"""A client's whole state is compared as JSON, not with Python's ==, which takes True for 1."""

import pytest

from agents.models import Thread
from agents.runtime import statesync
from state import services as state_services


@pytest.mark.django_db
@pytest.mark.parametrize("before, after", [(1, True), (0, False), (True, 1), (1, 1.5), ([1], [True])])
def test_a_change_python_calls_equal_is_applied(demo, before, after):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    assert statesync.apply_client_state(thread, demo["alice"], {"flag": before}, None)  # version 1
    ops = statesync.apply_client_state(thread, demo["alice"], {"flag": after}, None)
    assert ops and not isinstance(ops, statesync.NotApplied), ops
    data, version = state_services.snapshot(thread.state_key)
    assert version == 2 and type(data["flag"]) is type(after) and data["flag"] == after


@pytest.mark.django_db
def test_the_same_json_sent_again_is_no_change(demo):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    statesync.apply_client_state(thread, demo["alice"], {"flag": True, "n": [1, {"a": None}]}, None)
    assert statesync.apply_client_state(thread, demo["alice"], {"n": [1, {"a": None}], "flag": True}, None) == []
    assert state_services.snapshot(thread.state_key)[1] == 1
