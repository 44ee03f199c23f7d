"""Richer decisions: `respond` (the reviewer's guidance becomes the call's result for the model; the
call does not run; audited as its own kind) and, per tool, the decisions reviewers may give
(`allowed_decisions`): offered alone by the inbox, REST and the AG-UI resume schema, and refused by
the service otherwise (decision_not_allowed)."""

import json

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError

from agents import presenters
from agents import services as agent_services
from agents.models import Run, Thread, ToolCall
from agents.runtime import runner
from approvals import policy, services
from approvals.models import ApprovalRequest, AuditEvent, Decision
from tests.helpers import transfer_request

ARGS = {"from_account": "1234567890", "to_account": "0987654321", "amount": 500, "currency": "USD"}


def transfer_policy(demo, **fields):
    services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group",
                                            "approver_group": Group.objects.get(name="finance"), **fields},
                         demo["admin"])


# --- the service ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_respond_answers_with_guidance_and_is_audited_as_its_own_kind(demo):
    transfer_policy(demo, allowed_decisions=["approve", "reject", "respond"])
    req = transfer_request(demo["alice"])
    assert req.allowed_decisions == ["approve", "reject", "respond"]
    with pytest.raises(services.FeedbackRequired):
        services.decide(req.pk, demo["finn"], "respond", feedback="  ")
    with pytest.raises(services.FeedbackRequired):
        services.decide(req.pk, demo["finn"], "respond", feedback="\u200b\u200b")  # draws nothing
    done = services.decide(req.pk, demo["finn"], "respond", feedback="Send 450 now, the rest next week")
    assert done.status == "responded" and done.get_status_display() == "Answered with guidance"
    assert done.feedback == "Send 450 now, the rest next week" and done.final_arguments is None
    assert done.decided_by == demo["finn"]
    [decision] = Decision.objects.filter(request=req)
    assert decision.decision == "respond" and "answered with guidance" in str(decision)
    audit = AuditEvent.objects.get(request=req, action="decided")
    assert audit.after["decision"] == "respond" and audit.after["status"] == "responded"
    with pytest.raises(services.NotPending):
        services.decide(req.pk, demo["finn"], "approve")


@pytest.mark.django_db
def test_the_default_is_approve_edit_reject_and_respond_is_refused(demo):
    transfer_policy(demo)
    req = transfer_request(demo["alice"])
    assert req.allowed_decisions == ["approve", "edit", "reject"]
    with pytest.raises(services.DecisionNotAllowed) as exc:
        services.decide(req.pk, demo["finn"], "respond", feedback="try 450")
    assert exc.value.code == "decision_not_allowed" and exc.value.status_code == 400
    assert "does not let reviewers answer with guidance" in exc.value.message
    assert "approve, approve with edits or reject" in exc.value.message
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


@pytest.mark.django_db
def test_a_policy_without_edits_refuses_an_edit_but_takes_the_same_arguments(demo):
    transfer_policy(demo, allowed_decisions=["approve", "reject"])
    req = transfer_request(demo["alice"])
    with pytest.raises(services.DecisionNotAllowed, match="approve with edits"):
        services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 450.0})
    assert ApprovalRequest.objects.get(pk=req.pk).final_arguments is None
    assert services.decide(req.pk, demo["finn"], "approve", arguments=dict(req.arguments)).status == "approved"


@pytest.mark.django_db
def test_a_policy_without_approval_refuses_it(demo):
    transfer_policy(demo, allowed_decisions=["reject", "respond"])
    req = transfer_request(demo["alice"])
    with pytest.raises(services.DecisionNotAllowed, match="you can reject or answer with guidance"):
        services.decide(req.pk, demo["finn"], "approve")
    assert services.decide(req.pk, demo["finn"], "reject", feedback="no").status == "rejected"


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "message"), [
    ([], "at least one"), (["maybe"], "unknown decision(s) maybe"), ("approve", "a list"),
    (["approve", "approve"], "at most once"),
])
def test_allowed_decisions_are_validated_when_saved(demo, value, message):
    with pytest.raises(ValidationError) as exc:
        transfer_policy(demo, allowed_decisions=value)
    assert message in " ".join(exc.value.message_dict["allowed_decisions"])


# --- REST ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rest_decide_offers_respond_and_refuses_what_the_policy_does_not_allow(api, demo):
    transfer_policy(demo, allowed_decisions=["reject", "respond"])
    req = transfer_request(demo["alice"])
    finn = api("finn")
    shown = finn.get(f"/api/approvals/{req.pk}/").json()
    assert shown["allowed_decisions"] == ["reject", "respond"]
    refused = finn.post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "decision_not_allowed"
    assert refused.json()["decision"] == [refused.json()["message"]]
    missing = finn.post(f"/api/approvals/{req.pk}/decide/", {"decision": "respond"}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "feedback_required"
    ok = finn.post(f"/api/approvals/{req.pk}/decide/", {"decision": "respond", "feedback": "Ask Bob first"},
                   format="json")
    assert ok.status_code == 200, ok.content
    body = ok.json()
    assert body["status"] == "responded" and body["feedback"] == "Ask Bob first"
    assert body["decisions"][0]["decision"] == "respond"


@pytest.mark.django_db
def test_rest_policy_sets_allowed_decisions(api, demo):
    admin = api("admin")
    resp = admin.patch("/api/policies/transfer_money/", {"allowed_decisions": ["approve", "respond"]}, format="json")
    assert resp.status_code == 201, resp.content  # the tool's first row
    assert resp.json()["allowed_decisions"] == ["approve", "respond"]
    bad = admin.patch("/api/policies/transfer_money/", {"allowed_decisions": ["veto"]}, format="json")
    assert bad.status_code == 400 and "veto" in json.dumps(bad.json())
    assert policy.evaluate("transfer_money", {**ARGS, "amount": 5000.0}).allowed_decisions == ("approve", "respond")


# --- the inbox -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_inbox_form_offers_only_the_allowed_decisions(client, demo):
    transfer_policy(demo, allowed_decisions=["reject", "respond"])
    req = transfer_request(demo["alice"])
    client.force_login(demo["finn"])
    body = client.get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="respond"' in body and 'id="reject"' in body and 'id="approve"' not in body
    assert "does not allow edits" in body
    refused = client.post(f"/inbox/{req.pk}/", {"action": "approve", "feedback": ""})
    assert refused.status_code == 400 and "does not let reviewers approve" in refused.content.decode()
    done = client.post(f"/inbox/{req.pk}/", {"action": "respond", "feedback": "Split it in two"})
    assert done.status_code == 302
    req.refresh_from_db()
    assert req.status == "responded" and req.feedback == "Split it in two"


@pytest.mark.django_db
def test_the_default_inbox_form_has_no_respond_button(client, demo):
    transfer_policy(demo)
    req = transfer_request(demo["alice"])
    client.force_login(demo["finn"])
    body = client.get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="approve"' in body and 'id="reject"' in body and 'id="respond"' not in body


@pytest.mark.django_db
def test_the_policy_console_saves_allowed_decisions(client, demo):
    client.force_login(demo["admin"])
    form = {"mode": "always", "conditions": "", "approver_kind": "group", "approver_group": "finance",
            "required_approvals": "1", "timeout_seconds": "", "timeout_action": "reject", "risk": "high",
            "reminder_fraction": "0.5", "escalation_group": "", "escalation_fraction": "", "action": "save",
            "allowed_decisions_shown": "1"}
    page = client.get("/policies/transfer_money/").content.decode()
    assert 'name="allowed_decisions" value="respond"' in page
    none = client.post("/policies/transfer_money/", form)
    assert none.status_code == 400 and "choose at least one answer" in none.content.decode()
    saved = client.post("/policies/transfer_money/", {**form, "allowed_decisions": ["respond", "approve"]})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert policy.effective("transfer_money")["allowed_decisions"] == ("approve", "respond")


# --- through a real run, and the AG-UI resume ----------------------------------------------------


@pytest.fixture
def driven(monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)


def run(run_id):
    assert runner.run_agent(run_id)
    return Run.objects.get(pk=run_id)


@pytest.mark.django_db(transaction=True)
def test_respond_end_to_end_the_model_receives_the_guidance(demo, fake_llm, driven):
    transfer_policy(demo, allowed_decisions=["approve", "reject", "respond"])
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "r1", "name": "transfer_money", "arguments": json.dumps(ARGS)}]})
    first = run(agent_services.start_run(thread, demo["alice"], "Pay Bob 500").pk)
    assert first.status == "interrupted"
    req = ApprovalRequest.objects.get(tool_call_ref="r1")
    services.decide(req.pk, demo["finn"], "respond", feedback="Send 450 now and the rest next week")
    assert ToolCall.objects.get(pk="r1").status == "responded"

    fake_llm.push("Understood: I will send 450 now and the rest next week.")
    cont = run(Run.objects.get(parent_run=first).pk)
    assert cont.status == "succeeded"
    told = next(m["content"] for m in fake_llm.requests[-1]["messages"] if m.get("tool_call_id") == "r1")
    assert 'did not run it and says: "Send 450 now and the rest next week"' in told
    assert "Nothing was executed" in told
    call = ToolCall.objects.get(pk="r1")
    assert call.status == "responded"
    outcome = presenters.tool_outcome(call)  # the chat's sentence for the person, not the model's words
    assert outcome["status"] == "responded" and "guidance" in outcome["message"] and "says" not in outcome["message"]
    from agents.catalog.models import Transfer
    assert not Transfer.objects.exists()  # nothing ran


def cancel_policy(demo, allowed):
    services.save_policy("cancel_subscription", {"mode": "always", "approver_kind": "requester",
                                                 "approver_group": None, "allowed_decisions": allowed},
                         demo["admin"])


def paused_cancel(demo, fake_llm, call_id):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": call_id, "name": "cancel_subscription",
                                   "arguments": json.dumps({"subscription_id": "sub_123"})}]})
    paused = run(agent_services.start_run(thread, demo["alice"], "Cancel sub_123").pk)
    assert paused.status == "interrupted"
    return thread, paused, ApprovalRequest.objects.get(tool_call_ref=call_id)


@pytest.mark.django_db(transaction=True)
def test_the_resume_schema_offers_only_the_allowed_decisions_and_resume_refuses_others(demo, fake_llm, driven):
    cancel_policy(demo, ["approve", "reject"])
    thread, paused, req = paused_cancel(demo, fake_llm, "s1")
    schema = runner.interrupt_for(req).response_schema
    assert schema["properties"]["decision"]["enum"] == ["approve", "reject"]
    assert "arguments" not in schema["properties"]  # no edits
    assert "alwaysAllowInThread" in schema["properties"]
    with pytest.raises(agent_services.ResumeError) as exc:
        agent_services.apply_resume(thread, demo["alice"], [(req.pk, "resolved", {"decision": "respond",
                                                                                  "feedback": "later"})], "run-x")
    assert exc.value.code == "decision_not_allowed"
    with pytest.raises(agent_services.ResumeError) as exc:
        agent_services.apply_resume(thread, demo["alice"], [(req.pk, "resolved", {
            "approved": True, "arguments": {"subscription_id": "sub_456"}})], "run-x")
    assert exc.value.code == "decision_not_allowed"
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending" and not Run.objects.filter(pk="run-x").exists()
    agent_services.apply_resume(thread, demo["alice"], [(req.pk, "resolved", {"decision": "reject"})], "run-x")
    assert ApprovalRequest.objects.get(pk=req.pk).status == "rejected"


@pytest.mark.django_db(transaction=True)
def test_a_respond_only_tool_resumes_with_guidance(demo, fake_llm, driven):
    cancel_policy(demo, ["respond"])
    thread, paused, req = paused_cancel(demo, fake_llm, "s2")
    schema = runner.interrupt_for(req).response_schema
    assert schema["properties"]["decision"]["enum"] == ["respond"]
    assert "approved" not in schema["properties"] and "alwaysAllowInThread" not in schema["properties"]
    assert schema["anyOf"] == [{"required": ["decision"]}]
    with pytest.raises(agent_services.ResumeError) as exc:
        agent_services.apply_resume(thread, demo["alice"], [(req.pk, "resolved", {"approved": False})], "run-y")
    assert exc.value.code == "decision_not_allowed"
    agent_services.apply_resume(thread, demo["alice"], [(req.pk, "resolved", {
        "decision": "respond", "feedback": "Pause it for a month instead"})], "run-y")
    assert ApprovalRequest.objects.get(pk=req.pk).status == "responded"
    fake_llm.push("I will pause it instead.")
    assert run("run-y").status == "succeeded"
    told = next(m["content"] for m in fake_llm.requests[-1]["messages"] if m.get("tool_call_id") == "s2")
    assert '"Pause it for a month instead"' in told


# --- mail links ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_request_mail_links_only_the_allowed_decisions(demo, mailoutbox, django_capture_on_commit_callbacks):
    transfer_policy(demo, allowed_decisions=["reject", "respond"])
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    [mail] = [m for m in mailoutbox if m.to == [demo["finn"].email]]
    assert "\nReject:  http" in mail.body and "Approve:" not in mail.body
    assert "answer with guidance for the agent instead" in mail.body

    transfer_policy(demo, allowed_decisions=["approve", "edit", "reject"])
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    [mail] = [m for m in mailoutbox if m.to == [demo["finn"].email]]
    assert "Approve: http" in mail.body and "Reject:  http" in mail.body and "guidance" not in mail.body
