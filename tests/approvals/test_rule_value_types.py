"""A rule whose value cannot be compared with its argument never matches (a leaf of the wrong type
does not match, by design): written against a tool whose arguments' schema says the type, such a
rule is refused when saved. `{"path": "args.amount", "op": "gt", "value": "1000"}` with action
deny was saved and then let every transfer run in mode conditional (the string never compared with
the number); `currency eq "usd"` never matched the enum's "USD"."""

import pytest

from approvals import policy, rules

pytestmark = pytest.mark.django_db


def leaf(path, op, value):
    return {"path": path, "op": op, "value": value}


def deny(condition):
    return [{"name": "big", "when": condition, "action": "deny"}]


TRANSFER = {"from_account": "1234567890", "to_account": "0987654321", "amount": 5000.0, "currency": "USD"}


@pytest.mark.parametrize("condition", [
    leaf("args.amount", "gt", "1000"),  # a string limit for a number
    leaf("args.amount", "gte", True),
    leaf("args.amount", "eq", "5000"),
    leaf("args.amount", "in", [5000, "5000"]),
    leaf("args.amount", "matches", "^5"),  # a pattern on a number
    leaf("args.from_account", "eq", 1234567890),  # a number for a text
    leaf("args.from_account", "gt", 100),
    leaf("args.from_account", "not_in", ["1234567890", 1234567890]),
    leaf("args.currency", "eq", "usd"),  # not one of the enum's values
    leaf("args.currency", "in", ["usd", "eur"]),
    leaf("args.currency", "ne", "US Dollar"),
])
def test_a_value_the_argument_can_never_equal_is_refused_when_saved(api, condition):
    resp = api("admin").put("/api/policies/transfer_money/", {
        "mode": "conditional", "conditions": deny(condition), "approver_kind": "group",
        "approver_group": "finance"}, format="json")
    assert resp.status_code == 400, resp.content
    assert "conditions" in resp.json(), resp.json()
    assert policy.evaluate("transfer_money", TRANSFER).action != "auto"  # the code default still asks


@pytest.mark.parametrize("condition", [
    leaf("args.amount", "gt", 1000), leaf("args.amount", "gte", 1000.5), leaf("args.amount", "in", [1, 2.5]),
    leaf("args.from_account", "eq", "1234567890"), leaf("args.from_account", "gt", "5"),
    leaf("args.from_account", "matches", "^12"), leaf("args.currency", "in", ["USD", "EUR"]),
    leaf("args.currency", "ne", "USD"), leaf("args.from_account", "contains", "999"),
])
def test_values_of_the_arguments_type_are_saved(api, condition):
    resp = api("admin").put("/api/policies/transfer_money/", {
        "mode": "conditional", "conditions": deny(condition), "approver_kind": "group",
        "approver_group": "finance"}, format="json")
    assert resp.status_code in (200, 201), resp.content


def test_without_a_schema_or_a_plain_type_nothing_is_assumed():
    rules.validate(deny(leaf("args.amount", "gt", "1000")))  # no schema: the tool is not known
    union = {"type": "object", "properties": {"limit": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}
    rules.validate(deny(leaf("args.limit", "eq", "x")), schema=union)
    rules.validate(deny(leaf("args.limit", "eq", 3)), schema=union)
    nullable = {"type": "object", "properties": {"note": {"type": ["string", "null"]}}}
    rules.validate(deny(leaf("args.note", "eq", None)), schema=nullable)
    with pytest.raises(rules.RuleError):
        rules.validate(deny(leaf("args.note", "eq", 3)), schema=nullable)
