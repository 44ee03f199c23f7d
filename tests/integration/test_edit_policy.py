"""The arguments that execute have passed the policy that applies to them, and tools act only on
the requester's own objects: an edit (inbox, REST, AG-UI resume) is judged like a new call, and a
call on somebody else's account is refused before policy is asked."""

import json
from decimal import Decimal

import pytest

from agents import services
from agents.catalog.models import Account, Transfer
from agents.models import Message, Run, Thread, ToolCall
from agents.runtime import runner
from approvals import policy
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import transfer_request

pytestmark = [pytest.mark.django_db(transaction=True)]
ALICE, BOB = "1234567890", "0987654321"


@pytest.fixture(autouse=True)
def driven(monkeypatch):
    """Runs are driven here, not by Celery."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)


def deny_large_transfers(admin):
    approval_services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": _group("finance"),
        "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000},
                        "action": "deny"}, {"name": "every transfer", "action": "gate"}],
    }, admin)


def _group(name):
    from django.contrib.auth.models import Group

    return Group.objects.get(name=name)


def bob_transfer(demo, amount=5.0):
    """bob's own transfer of `amount` from his account to alice's, waiting for finance."""
    return transfer_request(demo["bob"], amount=amount, from_account=BOB, to_account=ALICE)


def test_an_edit_past_a_deny_rule_is_refused_and_nothing_moves(demo):
    deny_large_transfers(demo["admin"])
    req = bob_transfer(demo)
    with pytest.raises(approval_services.EditDenied) as exc:
        approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 3000})
    assert exc.value.code == "edit_denied" and "large" in exc.value.message
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments is None and not req.decisions.exists()
    # the arguments as asked still pass
    assert approval_services.decide(req.pk, demo["finn"], "approve").status == "approved"


def test_the_decide_api_answers_400_edit_denied_naming_the_rule(demo, api):
    deny_large_transfers(demo["admin"])
    req = bob_transfer(demo)
    r = api("finn").post(f"/api/approvals/{req.pk}/decide/",
                         {"decision": "approve", "arguments": {**req.arguments, "amount": 3000}}, format="json")
    assert r.status_code == 400, r.content
    assert r.json()["code"] == "edit_denied" and "rule 1 (large)" in r.json()["message"]
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_edit_refusals_are_in_the_reviewers_language(demo, api):
    """edit_denied and edit_needs_other_approver were English whatever Accept-Language said (the
    other refusals of the same endpoint were translated)."""
    from django.utils import translation

    deny_large_transfers(demo["admin"])
    req = bob_transfer(demo)
    with translation.override("en"):  # what the request activates ends with it, not in the next test
        r = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments": {
            **req.arguments, "amount": 3000}}, format="json", HTTP_ACCEPT_LANGUAGE="fr")
    assert r.json()["code"] == "edit_denied" and r.json()["message"].startswith("Ces arguments sont bloqués")
    assert "règle 1 (large)" in r.json()["message"]  # "rule 1" in the reader's words, its name as the admin wrote it
    with translation.override("en"):
        r = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments": {
            **req.arguments, "from_account": ALICE}}, format="json", HTTP_ACCEPT_LANGUAGE="fr")
    assert r.status_code == 400 and f"account {ALICE} n'appartient pas à bob" in str(r.json()), r.json()


def test_an_edit_that_needs_another_approver_than_the_request_has_is_refused(demo):
    """A rule routes large transfers to two of finance; a small one waits for the requester's own
    confirmation. Her edit to a large amount would have her approve what needs finance's two."""
    approval_services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "requester",
        "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 10},
                        "action": "gate", "route": {"group": "finance", "approvals": 2}},
                       {"name": "the rest", "action": "gate"}]}, demo["admin"])
    arguments = {"from_account": ALICE, "to_account": BOB, "amount": 5.0, "currency": "USD"}
    req = approval_services.request(
        tool_name="transfer_money", arguments=arguments, requester=demo["alice"],
        verdict=policy.evaluate("transfer_money", arguments, {"user": demo["alice"]}), description="Transfer 5.00 USD",
    )
    assert req.approver_kind == "requester"
    with pytest.raises(approval_services.EditNeedsOtherApprover) as exc:
        approval_services.decide(req.pk, demo["alice"], "approve", arguments={**req.arguments, "amount": 50})
    assert "approval by finance" in exc.value.message and "2 approvals" in exc.value.message
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_an_edit_the_same_approver_may_make_goes_on(demo):
    deny_large_transfers(demo["admin"])
    req = bob_transfer(demo, amount=50.0)
    done = approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 40})
    assert done.status == "modified" and done.final_arguments["amount"] == 40.0


def test_an_edit_may_not_point_a_transfer_at_someone_elses_account(demo):
    req = bob_transfer(demo)
    with pytest.raises(approval_services.InvalidArguments) as exc:
        approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "from_account": ALICE})
    assert exc.value.errors == {"from_account": [f"account {ALICE} is not bob's"]}
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_an_edit_to_an_object_that_does_not_exist_is_refused_as_not_the_requesters(demo):
    """alice approved her own cancellation edited to sub_999, which is nobody's: it was taken and
    the tool failed after it ("no subscription sub_999 belongs to you"), and the chat said "Done."
    The refusal reads as for someone else's, so it does not tell whether sub_999 exists."""
    from agents.catalog.models import Subscription

    assert Subscription.objects.get(ref="sub_123").owner == demo["alice"]  # the demo's
    Subscription.objects.create(ref="sub_bob", owner=demo["bob"], plan="Basic")
    arguments = {"subscription_id": "sub_123"}
    req = approval_services.request(
        tool_name="cancel_subscription", arguments=arguments, requester=demo["alice"],
        verdict=policy.evaluate("cancel_subscription", arguments, {"user": demo["alice"]}),
        description="Cancel subscription sub_123")
    for other in ("sub_999", "sub_bob"):
        with pytest.raises(approval_services.InvalidArguments) as exc:
            approval_services.decide(req.pk, demo["alice"], "approve", arguments={"subscription_id": other})
        assert exc.value.errors == {"subscription_id": [f"subscription {other} is not alice's"]}
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def ops_write(tmp_path, settings, demo, path):
    """alice's own overwrite of `path`, paused for her confirmation (write_file: overwrite -> gate)."""
    from approvals import policy

    settings.AGUI_SANDBOX_DIR = tmp_path
    approval_services.save_policy("write_file", {
        "mode": "conditional", "approver_kind": "requester",
        "conditions": [{"name": "system files", "when": {"path": "args.path", "op": "glob", "value": "/etc/*"},
                        "action": "deny"},
                       {"name": "overwrite", "when": {"path": "args.overwrite", "op": "eq", "value": True},
                        "action": "gate"}],
    }, demo["admin"])
    args = {"path": path, "content": "bye", "overwrite": True}
    return approval_services.request(tool_name="write_file", arguments=args, requester=demo["alice"],
                                     verdict=policy.evaluate("write_file", args, {"user": demo["alice"]}),
                                     description="Overwrite", thread_ref="t-ops")


def test_the_requester_cannot_resume_her_own_call_with_a_denied_path(demo, tmp_path, settings):
    req = ops_write(tmp_path, settings, demo, "/notes.txt")
    thread = Thread.objects.create(id="t-ops-resume", owner=demo["alice"], agent="ops")
    ApprovalRequest.objects.filter(pk=req.pk).update(thread_ref=thread.pk)
    with pytest.raises(services.ResumeError) as exc:
        services.apply_resume(thread, demo["alice"], [(req.pk, "resolved", {
            "approved": True, "arguments": {"path": "/etc/hosts", "content": "bye", "overwrite": True}})], "run-x")
    assert exc.value.code == "edit_denied" and "system files" in exc.value.message
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


# --- tools act for the requester -----------------------------------------------------------------


def run_banking(demo, fake_llm, user, *calls, text="go"):
    thread = Thread.objects.create(owner=demo[user], agent="banking")
    fake_llm.push({"tool_calls": [{"id": f"c{i}", "name": n, "arguments": json.dumps(a)}
                                  for i, (n, a) in enumerate(calls)]}, "Done.")
    run = services.start_run(thread, demo[user], text)
    assert runner.run_agent(run.pk)
    return thread, Run.objects.get(pk=run.pk)


def test_bob_cannot_read_alices_balance(demo, fake_llm):
    thread, run = run_banking(demo, fake_llm, "bob", ("check_balance", {"account": ALICE}))
    result = Message.objects.get(thread=thread, role="tool", tool_call_id="c0").content
    assert result == f"Error: account {ALICE} is not yours, so check_balance was not executed."
    assert "5432" not in result
    assert ToolCall.objects.get(pk="c0").status == "denied"


def test_bob_cannot_ask_finance_to_move_alices_money(demo, fake_llm):
    before = Account.objects.get(number=ALICE).balance
    thread, run = run_banking(demo, fake_llm, "bob", ("transfer_money", {
        "from_account": ALICE, "to_account": BOB, "amount": 5000, "currency": "USD"}))
    assert not ApprovalRequest.objects.filter(thread_ref=thread.pk).exists()  # refused before policy
    assert run.status == "succeeded"
    assert "is not yours" in Message.objects.get(thread=thread, role="tool", tool_call_id="c0").content
    assert Account.objects.get(number=ALICE).balance == before and not Transfer.objects.exists()


def test_a_transfer_to_someone_else_is_fine_and_the_inbox_shows_whose_accounts(demo, fake_llm, client):
    thread, run = run_banking(demo, fake_llm, "alice", ("transfer_money", {
        "from_account": ALICE, "to_account": BOB, "amount": 5, "currency": "USD"}))
    req = ApprovalRequest.objects.get(thread_ref=thread.pk)
    # the balance of the account the money leaves (the requester's own), not the payee's
    assert req.context["objects"] == [{"object": f"account {ALICE}", "owner": "alice", "state": "balance 5,432.10 USD"},
                                      {"object": f"account {BOB}", "owner": "bob"}]
    client.force_login(demo["finn"])
    page = client.get(f"/inbox/{req.pk}/").content.decode()
    assert f"Account {ALICE}</bdi></strong> <span class=\"muted\">(alice's own)" in page  # each value isolated
    assert f"Account {BOB}</bdi></strong> <span class=\"muted\">(belongs to bob)" in page
    assert "Balance 5,432.10 USD" in page and "1,000.00" not in page


def test_an_object_that_changed_hands_before_execution_is_refused_at_execution(demo, fake_llm):
    thread, run = run_banking(demo, fake_llm, "alice", ("transfer_money", {
        "from_account": ALICE, "to_account": BOB, "amount": 5, "currency": "USD"}))
    req = ApprovalRequest.objects.get(thread_ref=thread.pk)
    Account.objects.filter(number=ALICE).update(owner=demo["bob"])
    approval_services.decide(req.pk, demo["finn"], "approve")
    fake_llm.push("It did not go through.")
    cont = Run.objects.get(parent_run=run)
    assert runner.run_agent(cont.pk)
    assert ToolCall.objects.get(pk="c0").status == "failed"
    assert "is not yours" in Message.objects.get(thread=thread, role="tool", tool_call_id="c0").content
    assert not Transfer.objects.exists() and Account.objects.get(number=BOB).balance == Decimal("1000.00")


def test_an_object_that_does_not_exist_is_left_to_the_tool(demo, fake_llm):
    """Nobody's object is touched, so the call takes its usual way and the tool says what is missing."""
    thread, run = run_banking(demo, fake_llm, "alice", ("cancel_subscription", {"subscription_id": "sub_999"}))
    assert run.status == "interrupted"  # alice confirms her own cancellations
    req = ApprovalRequest.objects.get(thread_ref=thread.pk)
    assert "objects" not in req.context


def test_nobodys_account_is_not_the_requesters(demo, fake_llm):
    Account.objects.create(number="5555555555", owner=None, balance=10)
    thread, run = run_banking(demo, fake_llm, "alice", ("check_balance", {"account": "5555555555"}))
    assert "account 5555555555 is not yours" in Message.objects.get(thread=thread, role="tool").content
