"""Rules that route: a gate rule's action sets the approver group, the number of approvals, the risk
and the deadline (`amount > 10,000 -> treasury, 2 approvals, critical, 15 min`), validated when
saved, applied to the request, shown in the simulator and on the request page."""

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError

from approvals import policy, services
from approvals.models import ToolPolicy
from tests.inbox_helpers import record_call

pytestmark = pytest.mark.django_db

ROUTED = [
    {"name": "very large", "when": {"path": "args.amount", "op": "gt", "value": 10000}, "action": "gate",
     "route": {"group": "treasury", "approvals": 2, "risk": "critical", "deadline": "15 min"}},
    {"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000}, "action": "gate"},
]


def transfer(amount):
    return {"from_account": "1234567890", "to_account": "0987654321", "amount": amount, "currency": "USD"}


@pytest.fixture
def treasury(demo):
    group = Group.objects.create(name="treasury")
    services.save_policy("transfer_money", {"mode": "conditional", "conditions": ROUTED, "approver_kind": "group",
                                            "approver_group": Group.objects.get(name="finance"), "risk": "high",
                                            "timeout_seconds": 3600}, demo["admin"])
    return group


def test_a_routing_rule_sets_group_approvals_risk_and_deadline(demo, treasury):
    verdict = policy.evaluate("transfer_money", transfer(20000), {"user": demo["alice"]})
    assert verdict.action == "approve"
    assert (verdict.group, verdict.required_approvals, verdict.risk, verdict.timeout_seconds) == (
        treasury, 2, "critical", 900)
    assert verdict.matched_rule == ("policy: rule 1 (very large): gate "
                                    "(treasury, 2 approvals, critical risk, 15 min to decide)")
    # a rule without a route keeps the policy's own settings
    plain = policy.evaluate("transfer_money", transfer(5000), {"user": demo["alice"]})
    assert (plain.group.name, plain.required_approvals, plain.risk, plain.timeout_seconds) == (
        "finance", 1, "high", 3600)

    req = services.request(tool_name="transfer_money", arguments=transfer(20000), requester=demo["alice"],
                           verdict=verdict, description="Transfer 20000 USD")
    assert (req.approver_group, req.required_approvals, req.risk) == (treasury, 2, "critical")
    assert abs((req.expires_at - req.created_at) - timedelta(minutes=15)) < timedelta(seconds=5)


def test_the_request_page_shows_the_route(client, demo, treasury):
    verdict = policy.evaluate("transfer_money", transfer(20000), {"user": demo["alice"]})
    req = services.request(tool_name="transfer_money", arguments=transfer(20000), requester=demo["alice"],
                           verdict=verdict, description="Transfer 20000 USD")
    member = demo["finn"]
    member.groups.add(treasury)
    client.force_login(member)
    body = client.get(f"/inbox/{req.pk}/").content.decode()
    assert "rule 1 (very large): a person decides (treasury, 2 approvals, critical risk, 15 minutes to decide)" in body  # the rule that matched, in words
    who = body.split("<dt>Who decides</dt>", 1)[1].split("</dd>", 1)[0]
    assert "treasury" in who and "2 approvals" in who


@pytest.mark.parametrize(("route", "message"), [
    ({"group": "nobody-has-this"}, "there is no group named 'nobody-has-this'"),
    ({"approvals": 0}, "approvals: at least 1"),
    ({"approvals": "two"}, "approvals: at least 1"),
    ({"deadline": "soon"}, "deadline: a number of seconds"),
    ({"deadline": 0}, "deadline: a number of seconds"),
    ({"risk": "extreme"}, "risk: must be one of"),
    ({"colour": "red"}, "unknown key(s) colour"),
])
def test_a_bad_route_is_refused_when_saved(demo, route, message):
    with pytest.raises(ValidationError) as exc:
        services.save_policy("transfer_money", {
            "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
            "conditions": [{"when": {"path": "args.amount", "op": "gt", "value": 1}, "action": "gate",
                            "route": route}]}, demo["admin"])
    assert message in " ".join(exc.value.message_dict["conditions"])
    assert not ToolPolicy.objects.exists()


def test_only_gate_rules_route_and_many_approvals_need_a_group(demo):
    with pytest.raises(ValidationError) as exc:
        services.save_policy("transfer_money", {"mode": "conditional", "approver_kind": "requester",
                                                "conditions": [{"action": "deny", "route": {"risk": "high"}}]},
                             demo["admin"])
    assert "only a gate rule routes" in " ".join(exc.value.message_dict["conditions"])
    with pytest.raises(ValidationError) as exc:
        services.save_policy("transfer_money", {"mode": "conditional", "approver_kind": "requester",
                                                "conditions": [{"action": "gate", "route": {"approvals": 2}}]},
                             demo["admin"])
    assert "only a group can give more than one approval" in " ".join(exc.value.message_dict["conditions"])


def test_the_rest_api_refuses_an_unknown_routed_group(api, demo):
    client = api("admin")
    resp = client.put("/api/policies/transfer_money/", {
        "mode": "conditional", "approver_kind": "group", "approver_group": "finance",
        "conditions": [{"action": "gate", "route": {"group": "ghosts"}}]}, format="json")
    assert resp.status_code == 400, resp.content
    assert "there is no group named 'ghosts'" in json.dumps(resp.json())


def test_the_simulator_shows_the_route(client, demo, treasury):
    record_call("alice", "transfer_money", transfer(20000), status="succeeded", seconds_ago=1)
    record_call("alice", "transfer_money", transfer(5000), status="succeeded", seconds_ago=2)
    client.force_login(demo["admin"])
    resp = client.post("/policies/transfer_money/", {
        "mode": "conditional", "conditions": json.dumps(ROUTED), "approver_kind": "group",
        "approver_group": "finance", "required_approvals": "1", "timeout_seconds": "", "timeout_action": "reject",
        "risk": "high", "reminder_fraction": "0.5", "escalation_group": "", "escalation_fraction": "",
        "action": "simulate", "limit": "50"})
    assert resp.status_code == 200
    routes = [r["route"] for r in resp.context["simulation"].results]
    assert routes == ["treasury, 2 approvals, critical risk, 15 minutes to decide", ""]
    assert "Review: treasury, 2 approvals, critical risk, 15 minutes to decide" in resp.content.decode()


@pytest.mark.parametrize("route,at_deadline", [
    ({"approvals": 2}, "reject"),  # four eyes the rule asks for: not one approval, nor none
    ({"group": "treasury"}, "reject"),
    ({"deadline": "5 min"}, "approve"),  # a shorter deadline only: the policy's own at the deadline
])
def test_the_deadline_approves_no_call_a_rule_routes_to_more_people(demo, route, at_deadline):
    """A low-risk policy that approves at the deadline approved a call its rule sent to two approvers
    with none of them."""
    from approvals.models import ApprovalRequest

    Group.objects.create(name="treasury")
    rule = {"name": "big", "when": {"path": "args.amount", "op": "gt", "value": 100}, "action": "gate", "route": route}
    services.save_policy("transfer_money", {
        "mode": "conditional", "conditions": [rule, {"name": "rest", "action": "gate"}], "approver_kind": "group",
        "approver_group": Group.objects.get(name="finance"), "risk": "low", "timeout_action": "approve",
        "timeout_seconds": 3600}, demo["admin"])
    assert policy.evaluate("transfer_money", transfer(500), {"user": demo["alice"]}).timeout_action == at_deadline
    assert policy.evaluate("transfer_money", transfer(50), {"user": demo["alice"]}).timeout_action == "approve"
    verdict = policy.evaluate("transfer_money", transfer(500), {"user": demo["alice"]})
    req = services.request(tool_name="transfer_money", arguments=transfer(500), requester=demo["alice"],
                           verdict=verdict, description="Transfer 500 USD")
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=req.expires_at - timedelta(hours=2))
    assert services.expire(req.pk)
    assert ApprovalRequest.objects.get(pk=req.pk).status == ("approved" if at_deadline == "approve" else "expired")
