"""The support demo's order tools read an order's history, not only the status its last action left:
a replacement the customer confirmed after a refund set the order to "replacement sent", and the same
order was then refunded a second time."""

from types import SimpleNamespace

import pytest

from agents.catalog import support
from agents.catalog.models import Order, OrderAction
from agents.runtime.tools import ToolError, on_behalf_of

pytestmark = pytest.mark.django_db


def ctx(demo, call_id):
    return SimpleNamespace(user=demo["alice"], tool_call_id=call_id, forwarded_props={})


def test_a_refunded_order_gets_no_replacement_and_no_second_refund(demo):
    refund = {"order_id": "12345", "amount": 129.99, "refund_description": "arrived broken"}
    assert support.submit_refund.run(ctx(demo, "c-refund"), refund).startswith("Refund of 129.99 USD recorded")

    replacement = {"order_id": "12345", "shipping_preference": "express", "replacement_note": "broken"}
    with pytest.raises(ToolError, match="Order 12345 was already refunded."):
        support.submit_replacement.run(ctx(demo, "c-replace"), replacement)
    with on_behalf_of(demo["alice"]):  # said up front too: nobody is asked to confirm what will be refused
        assert support.submit_replacement.refuses(replacement) == "Order 12345 was already refunded."

    # were its status overwritten all the same (an action before this rule), its history still says so
    Order.objects.filter(number="12345").update(status=Order.Status.REPLACEMENT_SENT)
    with pytest.raises(ToolError, match="Order 12345 was already refunded."):
        support.submit_refund.run(ctx(demo, "c-refund-2"), refund)
    with on_behalf_of(demo["alice"]):
        assert support.submit_refund.refuses(refund) == "Order 12345 was already refunded."
    assert list(OrderAction.objects.values_list("kind", flat=True)) == ["refund"]


def test_an_order_not_refunded_is_replaced(demo):
    replacement = {"order_id": "12345", "shipping_preference": "standard", "replacement_note": "wrong colour"}
    with on_behalf_of(demo["alice"]):
        assert support.submit_replacement.refuses(replacement) is None
    assert "12345" in support.submit_replacement.run(ctx(demo, "c-replace"), replacement)
    assert Order.objects.get(number="12345").status == Order.Status.REPLACEMENT_SENT


def test_a_refund_or_replacement_whose_worker_died_is_read_back_from_its_record(demo):
    """Recovery asks the tool's records (outcome=): without them, a refund made before its worker died
    was reported "outcome unknown", and one never made was not run again."""
    from agents.runtime.tools import NOT_DONE

    refund = {"order_id": "12345", "amount": 20, "refund_description": "late"}
    assert support.submit_refund.outcome("c-never", refund) == NOT_DONE
    made = support.submit_refund.run(ctx(demo, "c-made"), refund)
    assert support.submit_refund.outcome("c-made", refund) == made == \
        "Refund of 20.00 USD recorded for order 12345 (Wireless Headphones)."
    assert support.submit_replacement.outcome("c-made", {}) == NOT_DONE  # a refund is no replacement


def test_a_replacement_is_read_back_from_its_record(demo):
    replacement = {"order_id": "12345", "shipping_preference": "express", "replacement_note": "broken"}
    made = support.submit_replacement.run(ctx(demo, "c-replaced"), replacement)
    assert support.submit_replacement.outcome("c-replaced", replacement) == made
