"""selectors.earlier_rejection: the rejection that makes the same call in the same thread be refused
without asking the reviewers again (the runner's no-circumvention check)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import selectors, services
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db

ARGS = {"from_account": "1234567890", "to_account": "0987654321", "amount": 500.0, "currency": "USD"}


def rejected(demo, **overrides):
    req = transfer_request(demo["alice"], **overrides)
    return services.decide(req.pk, demo["finn"], "reject", feedback="Not now")


def test_the_same_tool_and_equivalent_arguments_in_the_same_thread(demo):
    req = rejected(demo)
    same = {"currency": "USD", "amount": 500.0, "to_account": "0987654321", "from_account": "1234567890"}
    found = selectors.earlier_rejection(tool_name="transfer_money", arguments=same, thread_ref="t-test")
    assert found == req and found.feedback == "Not now"
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments={**ARGS, "amount": 501.0},
                                       thread_ref="t-test") is None
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments=ARGS, thread_ref="t-other") is None
    assert selectors.earlier_rejection(tool_name="cancel_subscription", arguments=ARGS, thread_ref="t-test") is None
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments=ARGS, thread_ref="") is None


def test_a_user_message_after_the_rejection_lifts_it(demo):
    req = rejected(demo)
    before = req.decided_at - timedelta(seconds=1)
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments=ARGS, thread_ref="t-test",
                                       since=before) == req
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments=ARGS, thread_ref="t-test",
                                       since=timezone.now()) is None


def test_only_rejections_count(demo):
    req = transfer_request(demo["alice"])
    services.decide(req.pk, demo["finn"], "approve")
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments=ARGS, thread_ref="t-test") is None
    pending = transfer_request(demo["alice"])
    assert pending.status == "pending"
    assert selectors.earlier_rejection(tool_name="transfer_money", arguments=ARGS, thread_ref="t-test") is None
