"""An argument of a kind a rule does not compare is refused, never let past the rule. An outside
agent sends its own schema, so it chose the kinds: `{"amount": "5000"}` did not match `deny when
amount gt 1000` and fell through to the policy's last rule (`allow`: approved with nobody asked),
and a reviewer's edit to "5000" was taken where 5000 was refused. A tool that reads "5000" as
5000 would have run what the rule exists to stop."""

import pytest

from approvals import policy, rule_words, rules
from approvals.models import ApprovalRequest

pytestmark = pytest.mark.django_db

CONDITIONS = [
    {"name": "too large", "when": {"path": "args.amount", "op": "gt", "value": 1000}, "action": "deny"},
    {"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 100}, "action": "gate"},
    {"name": "otherwise", "action": "allow"},
]


def save(api, tool, **fields):
    resp = api("admin").put(f"/api/policies/{tool}/", fields, format="json")
    assert resp.status_code in (200, 201), resp.content


@pytest.fixture
def payments(api):
    save(api, "ext.pay", mode="conditional", approver_kind="group", approver_group="reviewers", risk="high",
         conditions=CONDITIONS)


def ask(api, arguments, schema=None, **extra):
    return api("alice").post("/api/approvals/", {"tool_name": "ext.pay", "arguments": arguments,
                                                 "schema": schema or {"type": "object"}, **extra}, format="json")


@pytest.mark.parametrize("amount,status,rule", [
    (5000, "denied", "rule 1 (too large): deny"),
    (500, "pending", "rule 2 (large): gate"),
    (50, "approved", "rule 3 (otherwise): allow"),
    (None, "approved", "rule 3 (otherwise): allow"),  # null is no amount, as a missing one is
])
def test_numbers_are_judged_by_the_rules_as_written(api, payments, amount, status, rule):
    resp = ask(api, {"amount": amount})
    assert resp.status_code == 201, resp.content
    assert (resp.json()["status"], resp.json()["matched_rule"]) == (status, f"policy: {rule}")


@pytest.mark.parametrize("amount,kind", [("5000", "string"), ([5000], "array"), ({"value": 5000}, "object"),
                                         (True, "boolean")])
def test_an_amount_of_another_kind_is_refused_not_let_past_the_deny(api, payments, amount, kind):
    resp = ask(api, {"amount": amount})
    assert resp.status_code == 201, resp.content
    data = resp.json()
    assert data["status"] == "denied", data
    assert data["matched_rule"] == f"policy: rule 1 (too large): cannot judge args.amount ({kind} where it compares number)"


def test_a_reviewers_edit_to_text_is_refused_as_the_number_is(api, payments):
    untyped = {"type": "object", "properties": {"amount": {}}}
    req = ask(api, {"amount": 500}, schema=untyped).json()
    assert req["status"] == "pending"
    for amount in (5000, "5000"):
        resp = api("rita").post(f"/api/approvals/{req['id']}/decide/",
                                {"decision": "approve", "arguments": {"amount": amount}}, format="json")
        assert resp.status_code == 400 and resp.json()["code"] == "edit_denied", resp.content
    assert "cannot judge args.amount given as text (it compares a number)" in resp.json()["arguments"][0]
    assert ApprovalRequest.objects.get(pk=req["id"]).status == "pending"
    ok = api("rita").post(f"/api/approvals/{req['id']}/decide/",
                          {"decision": "approve", "arguments": {"amount": 450}}, format="json")
    assert ok.status_code == 200 and ok.json()["status"] == "modified", ok.content


def test_kinds_are_checked_for_every_operator_on_the_arguments_only():
    def judged(when, scope):
        return rules.first_match([{"name": "r", "when": when, "action": "deny"}], scope)

    scope = rules.scope_for("t", {"to": ["a@evil.com"], "cc": "x@ok.com", "n": 3, "tags": {"k": 1}})
    with pytest.raises(rules.Unjudgeable) as exc:  # a pattern for text, given a list
        judged({"path": "args.to", "op": "glob", "value": "*@evil.com"}, scope)
    assert exc.value.label == "rule 1 (r): cannot judge args.to (array where it compares string)"
    with pytest.raises(rules.Unjudgeable):  # a list of accounts (text) given a number
        judged({"path": "args.n", "op": "in", "value": ["3", "4"]}, scope)
    with pytest.raises(rules.Unjudgeable):  # contains on a number
        judged({"path": "args.n", "op": "contains", "value": "3"}, scope)
    assert judged({"path": "args.cc", "op": "contains", "value": "@ok.com"}, scope)
    assert judged({"path": "args.to", "op": "contains", "value": "a@evil.com"}, scope)
    assert judged({"path": "args.tags", "op": "contains", "value": "k"}, scope)  # an object's key
    assert judged({"path": "args.n", "op": "in", "value": [3, "3"]}, scope)  # either kind is compared
    assert judged({"path": "args.n", "op": "ne", "value": None}, scope)  # null compares with anything
    assert judged({"path": "args.missing", "op": "gt", "value": 1}, scope) is None
    nothing = rules.scope_for("t", {"cc": None})  # null is no value of any kind: compared as before
    assert judged({"path": "args.cc", "op": "eq", "value": None}, nothing)
    assert judged({"path": "args.cc", "op": "ne", "value": "x@ok.com"}, nothing)
    assert judged({"path": "args.cc", "op": "glob", "value": "*"}, nothing) is None
    # the caller does not choose the server's facts: a rule that cannot meet them simply does not match
    assert judged({"path": "tool", "op": "gt", "value": 5}, scope) is None


def test_the_refusal_is_said_in_the_readers_words():
    said = rule_words.said("policy: rule 1 (too large): cannot judge args.amount (string where it compares number)")
    assert said == ("the tool's policy: rule 1 (too large): blocked, because it cannot judge args.amount given as "
                    "text (it compares a number)")
    assert "a number or text" in rule_words.said(
        "policy: rule 2 (x): cannot judge args.n (boolean where it compares number or string)")


def test_our_own_agents_calls_are_refused_alike(api, demo):
    """A tool whose schema leaves a type open: the verdict the runner acts on."""
    save(api, "ext.pay", mode="conditional", approver_kind="requester", conditions=CONDITIONS)
    verdict = policy.evaluate("ext.pay", {"amount": "5000"}, {"user": demo["alice"]})
    assert verdict.action == "deny" and "cannot judge args.amount" in verdict.matched_rule


def test_an_outside_call_is_judged_with_the_agent_it_names(api, demo):
    """The agent's name was left out when the call was asked and given on an edit: a rule on it
    blocked the edit but not the call."""
    save(api, "ext.agent", mode="conditional", approver_kind="group", approver_group="reviewers", conditions=[
        {"name": "not that bot", "when": {"path": "agent", "op": "eq", "value": "bad-bot"}, "action": "deny"},
        {"name": "rest", "action": "gate"}])
    resp = api("alice").post("/api/approvals/", {"tool_name": "ext.agent", "arguments": {"n": 1},
                                                 "schema": {"type": "object"}, "agent_name": "bad-bot"}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "denied", resp.content
    assert resp.json()["matched_rule"] == "policy: rule 1 (not that bot): deny"
