"""A policy saved while requests wait: the ones it now blocks are withdrawn (cancelled, the rule as the
reason). Before, an admin who set transfer_money to deny during an incident left its pending
transfers approvable as they were (an edit of one down to 10.00 was refused as blocked, approving its
5,000.00 ran); requests the new policy does not block wait as before."""

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


def test_a_deny_withdraws_the_requests_it_blocks_and_leaves_the_others(api, demo):
    large = transfer_request(demo["alice"], amount=5000.0)
    small = transfer_request(demo["alice"], amount=50.0)
    resp = api("admin").put("/api/policies/transfer_money/", {
        "mode": "conditional", "approver_kind": "group", "approver_group": "finance",
        "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000},
                        "action": "deny"}, {"name": "the rest", "action": "gate"}]}, format="json")
    assert resp.status_code in (200, 201), resp.content
    large.refresh_from_db()
    small.refresh_from_db()
    assert large.status == "cancelled" and "large" in large.feedback, large.feedback
    assert small.status == "pending"
    assert AuditEvent.objects.filter(request=large, action="cancelled").exists()
    refused = api("finn").post(f"/api/approvals/{large.pk}/decide/", {"decision": "approve"}, format="json")
    assert refused.status_code == 409, refused.content
    assert ApprovalRequest.objects.get(pk=large.pk).status == "cancelled"


def test_an_edited_request_is_judged_by_what_it_now_approves(demo):
    req = transfer_request(demo["alice"], amount=50.0)
    services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 60.0})  # decides it
    pending = transfer_request(demo["alice"], amount=50.0)
    ApprovalRequest.objects.filter(pk=pending.pk).update(final_arguments={**pending.arguments, "amount": 2000.0})
    services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000},
                        "action": "deny"}, {"name": "the rest", "action": "gate"}]}, demo["admin"])
    assert ApprovalRequest.objects.get(pk=pending.pk).status == "cancelled"
    assert ApprovalRequest.objects.get(pk=req.pk).status == "modified"  # decided before: untouched


def test_a_tool_set_to_deny_withdraws_every_request_of_it(demo):
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group",
                                            "approver_group": Group.objects.get(name="finance")}, demo["admin"])
    req = transfer_request(demo["alice"], amount=50.0)
    services.save_policy("transfer_money", {"mode": "deny", "approver_kind": "requester",
                                            "approver_group": None}, demo["admin"])
    assert ApprovalRequest.objects.get(pk=req.pk).status == "cancelled"


def test_an_edit_back_to_the_asked_arguments_is_judged_by_the_policy_in_force(demo):
    """The sweep judges a request by its current arguments (an edit down to 500.00 is not blocked), and an
    edit back to the 5,000.00 first asked was taken unjudged (it had passed when it was asked)."""
    finance = Group.objects.get(name="finance")
    demo["bob"].groups.add(finance)
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": finance,
                                            "required_approvals": 2, "risk": "high"}, demo["admin"])
    req = transfer_request(demo["alice"], amount=5000.0)
    services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 500.0})
    services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": finance, "required_approvals": 2,
        "risk": "high", "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000},
                                        "action": "deny"}, {"name": "the rest", "action": "gate"}]}, demo["admin"])
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    with pytest.raises(services.EditDenied):
        services.decide(req.pk, demo["bob"], "approve", arguments=req.arguments)
    assert ApprovalRequest.objects.get(pk=req.pk).current_arguments["amount"] == 500.0


def _treasury_for_large(demo, approvals=2):
    treasury = Group.objects.create(name="treasury")
    demo["bob"].groups.add(treasury)
    demo["rita"].groups.add(treasury)
    services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000},
                        "action": "gate", "route": {"group": "treasury", "approvals": approvals, "risk": "critical"}},
                       {"name": "the rest", "action": "gate"}]}, demo["admin"])
    return treasury


def test_a_stricter_route_applies_to_the_requests_that_wait(demo, django_capture_on_commit_callbacks):
    """The old rule was kept: after the admin gave large transfers to two of treasury, one finance
    approval still ran a pending 5,000.00 transfer."""
    large = transfer_request(demo["alice"], amount=5000.0)
    small = transfer_request(demo["alice"], amount=50.0)
    with django_capture_on_commit_callbacks(execute=False):
        treasury = _treasury_for_large(demo)
    large.refresh_from_db()
    assert (large.approver_group_id, large.required_approvals, large.risk) == (treasury.pk, 2, "critical")
    assert ApprovalRequest.objects.get(pk=small.pk).approver_group.name == "finance"  # the rule it meets is the same
    with pytest.raises(services.Forbidden):
        services.decide(large.pk, demo["finn"], "approve")
    assert services.decide(large.pk, demo["bob"], "approve").status == "pending"
    assert services.decide(large.pk, demo["rita"], "approve").status == "approved"
    assert AuditEvent.objects.filter(request=large, action="policy_changed",
                                     after__deciders="treasury", after__required_approvals=2).exists()


def test_approvals_given_before_a_request_moved_to_another_group_stop_counting(demo):
    finance = Group.objects.get(name="finance")
    demo["bob"].groups.add(finance)
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": finance,
                                            "required_approvals": 2}, demo["admin"])
    req = transfer_request(demo["alice"], amount=5000.0)
    assert services.decide(req.pk, demo["finn"], "approve").status == "pending"
    _treasury_for_large(demo)
    req.refresh_from_db()
    assert req.decisions.get().withdrawn_at is not None
    assert AuditEvent.objects.filter(request=req, action="withdrawn").exists()
    assert services.decide(req.pk, demo["bob"], "approve").status == "pending"  # one of treasury's two
    assert services.decide(req.pk, demo["rita"], "approve").status == "approved"


def test_the_group_the_policy_names_decides_and_a_quorum_or_risk_never_falls(demo):
    """The group in force decides (the admin took the tool from the other); a smaller quorum or a lower risk
    is not applied to what was asked under a stricter one."""
    _treasury_for_large(demo)
    large = transfer_request(demo["alice"], amount=5000.0)
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group",
                                            "approver_group": Group.objects.get(name="finance"), "conditions": []},
                         demo["admin"])
    large.refresh_from_db()
    assert (large.approver_group.name, large.required_approvals, large.risk) == ("finance", 2, "critical")


def test_the_new_group_hears_of_a_rerouted_request_and_the_former_one_only_that_it_is_gone(
        demo, monkeypatch, mailoutbox, django_capture_on_commit_callbacks):
    from approvals import notify

    sent = []
    monkeypatch.setattr(notify, "_send", lambda targets, notice: sent.append((set(targets), notice)))
    finance = Group.objects.get(name="finance")
    large = transfer_request(demo["alice"], amount=5000.0)
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        treasury = _treasury_for_large(demo)
    rerouted = [(t, n) for t, n in sent if n["type"] == "approval.rerouted"]
    assert len(rerouted) == 1 and notify.group_for_approver_group(treasury.pk) in rerouted[0][0]
    assert notify.group_for_approver_group(finance.pk) not in rerouted[0][0]
    about_requests = [(t, n) for t, n in sent if n["type"] != "policy.changed"]  # the policy pages' own notice
    assert about_requests[-1] == ({notify.group_for_approver_group(finance.pk)}, {"type": "approval.gone",
                                                                                  "approval": {"id": large.pk}})
    assert [t for t, n in sent if n["type"] == "policy.changed"] == [{notify.STAFF_GROUP}]
    assert sorted(m.to[0] for m in mailoutbox) == ["bob@example.com", "rita@example.com"]


def test_a_quorum_raised_a_moment_falls_back_to_the_one_asked_not_below_it(demo):
    """The quorum compared with the request's last one, not the one it was asked with: raised to 3 by
    mistake for a group of two and set back to 2, a waiting request kept needing 3 and could only
    expire. It falls back to what was asked, and never to the approvals it already has."""
    finance = Group.objects.get(name="finance")

    def quorum(n):
        services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": finance,
                                                "required_approvals": n, "conditions": []}, demo["admin"])

    quorum(2)
    req = transfer_request(demo["alice"], amount=50.0)
    assert ApprovalRequest.objects.get(pk=req.pk).required_approvals == 2
    quorum(3)
    assert ApprovalRequest.objects.get(pk=req.pk).required_approvals == 3
    quorum(2)
    assert ApprovalRequest.objects.get(pk=req.pk).required_approvals == 2  # as asked
    quorum(1)
    assert ApprovalRequest.objects.get(pk=req.pk).required_approvals == 2  # never below what was asked
    quorum(3)
    services.decide(req.pk, demo["finn"], "approve")
    demo["bob"].groups.add(finance)
    services.decide(req.pk, demo["bob"], "approve")  # 2 of 3
    quorum(2)
    req = ApprovalRequest.objects.get(pk=req.pk)
    assert (req.status, req.required_approvals) == ("pending", 3)  # not approved by a policy change


def _waiting_transfer_then_offered(demo, offered):
    """A transfer waiting on finance, asked with the default answers, then the policy's answers changed to `offered`."""
    finance = Group.objects.get(name="finance")
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": finance},
                         demo["admin"])
    req = transfer_request(demo["alice"], amount=30.0)
    assert req.allowed_decisions == ["approve", "edit", "reject"]
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": finance,
                                            "allowed_decisions": offered}, demo["admin"])
    return req


def test_answers_a_policy_takes_away_are_taken_from_the_requests_that_wait(api, demo):
    """An admin who stops edits of transfers mid-incident stops them on the waiting transfers too: the
    request keeps only the answers both it and the policy offer (an edit was taken as "modified")."""
    req = _waiting_transfer_then_offered(demo, ["approve", "reject", "respond"])
    req.refresh_from_db()
    assert req.allowed_decisions == ["approve", "reject"]  # respond, never offered it, is not added
    audit = AuditEvent.objects.filter(request=req, action="policy_changed").last()
    assert audit.before["allowed_decisions"] == ["approve", "edit", "reject"]
    assert audit.after["allowed_decisions"] == ["approve", "reject"]
    edit = api("finn").post(f"/api/approvals/{req.pk}/decide/",
                            {"decision": "approve", "arguments": {**req.arguments, "amount": 31.0}}, format="json")
    assert edit.status_code == 400 and edit.json()["code"] == "decision_not_allowed", edit.content
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    assert api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"},
                            format="json").json()["status"] == "approved"


def test_a_policy_change_never_leaves_a_waiting_request_without_a_way_to_say_no(demo):
    """Narrowed to what both offered, a request asked with approve, edit and reject under a policy now
    offering approve and respond kept approve alone: nobody could stop the call, and a policy put back
    never widens it again. The refusal the policy in force offers is kept instead."""
    req = _waiting_transfer_then_offered(demo, ["approve", "respond"])
    req.refresh_from_db()
    assert req.allowed_decisions == ["approve", "respond"]
    answered = services.decide(req.pk, demo["finn"], "respond", feedback="Ask the customer first.")
    assert answered.status == "responded"


@pytest.mark.parametrize("offered", [["approve"], ["approve", "edit"], ["edit"]])
def test_a_policy_that_offers_no_way_to_say_no_is_refused(demo, offered):
    finance = Group.objects.get(name="finance")
    with pytest.raises(ValidationError) as exc:
        services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": finance,
                                                "allowed_decisions": offered}, demo["admin"])
    assert "include reject or respond" in " ".join(exc.value.message_dict["allowed_decisions"])
