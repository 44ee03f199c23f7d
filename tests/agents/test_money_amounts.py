"""A money amount is validated to whole cents, the precision that moves: 4999.995 was judged below a
rule `amount gte 5000 -> deny` and moved 5000.00 (the tool rounds half up), and 0.004 passed `gt 0`
and moved 0.00. The arguments that execute are the ones policy judged."""

import pytest
from django.contrib.auth.models import Group

from approvals import policy
from approvals import services as approval_services
from approvals.registry import ArgumentsInvalid

pytestmark = pytest.mark.django_db
from agents.catalog.banking import transfer_money as TRANSFER  # noqa: E402
from agents.catalog.support import submit_refund as REFUND  # noqa: E402


def transfer(amount):
    return {"from_account": "1234567890", "to_account": "0987654321", "amount": amount, "currency": "USD"}


@pytest.mark.parametrize("amount", [4999.995, 0.004, 0.001, 10.123, 1e-7])
def test_an_amount_finer_than_a_cent_is_refused(amount):
    with pytest.raises(ArgumentsInvalid) as exc:
        TRANSFER.validate(transfer(amount))
    assert "amount" in exc.value.errors
    with pytest.raises(ArgumentsInvalid):
        REFUND.validate({"order_id": "12345", "amount": amount, "refund_description": "broken"})


@pytest.mark.parametrize("amount", [0.01, 10, 10.1, 10.25, 4999.99, 1_000_000, 1e2])
def test_whole_cents_are_taken(amount):
    assert TRANSFER.validate(transfer(amount))["amount"] == amount


def test_the_edit_that_rounds_past_a_deny_rule_is_refused(demo):
    approval_services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gte", "value": 5000},
                        "action": "deny"}, {"name": "every transfer", "action": "gate"}]}, demo["admin"])
    assert policy.evaluate("transfer_money", TRANSFER.validate(transfer(5000)), {"user": demo["alice"]}).action == "deny"
    with pytest.raises(ArgumentsInvalid):
        TRANSFER.validate(transfer(4999.995))
