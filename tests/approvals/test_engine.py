"""Deciding: four eyes, quorum, edits that withdraw approvals, rejection, bulk, "always allow in this
thread"; deadlines (countdown tasks and a live beat, mail and inbox notices); races on PostgreSQL;
tasks delivered twice; rejected / expired / cancelled calls never execute."""

import asyncio
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, User
from django.core import mail
from django.db import close_old_connections
from django.utils import timezone

from agents.models import Message, Run, ToolCall
from agents.runtime import runner as agent_runner
from approvals import notify, policy, selectors, services
from approvals.models import ApprovalRequest, AuditEvent, Decision, ThreadGrant
from approvals.signals import approval_resolved
from tests.conftest import wait_for_event
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


def wait_until(check, timeout=15.0, what="condition"):
    """Wait on real state (a row, a list) rather than a fixed sleep; returns check()'s value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        close_old_connections()
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def finance(demo):
    group = Group.objects.get(name="finance")
    demo["rita"].groups.add(group)  # finance now has finn and rita
    return group


def set_transfer_policy(demo, **fields):
    base = {"mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name="finance")}
    services.save_policy("transfer_money", {**base, **fields}, demo["admin"])


@pytest.fixture
def resolved():
    seen = []

    def on(sender, request, **kwargs):
        seen.append((request.pk, request.status))

    approval_resolved.connect(on, weak=False)
    yield seen
    approval_resolved.disconnect(on)


# --- four eyes and quorum ---------------------------------------------------------------------------


def test_four_eyes_the_requester_never_decides_or_counts(demo, finance):
    set_transfer_policy(demo, required_approvals=2)
    req = transfer_request(demo["finn"])  # finn is in finance, and asks himself
    assert not services.can_decide(demo["finn"], req)
    with pytest.raises(services.Forbidden):
        services.decide(req.pk, demo["finn"], "approve")
    # even a decision row written behind the service's back would not count for him
    Decision.objects.create(request=req, user=demo["finn"], decision="approve",
                            arguments=req.arguments, arguments_hash=services.arguments_hash(req.arguments))
    decided = services.decide(req.pk, demo["rita"], "approve")
    assert decided.status == "pending"  # rita is one approver; finn never counts
    assert services.can_decide(demo["rita"], decided)


def test_quorum_of_two_distinct_approvers(demo, finance, resolved, django_capture_on_commit_callbacks):
    set_transfer_policy(demo, required_approvals=2)
    req = transfer_request(demo["alice"])
    with django_capture_on_commit_callbacks(execute=True):
        first = services.decide(req.pk, demo["finn"], "approve", feedback="fine by me")
    assert first.status == "pending" and resolved == []
    with pytest.raises(services.AlreadyApproved):  # the same person twice is still one approver
        services.decide(req.pk, demo["finn"], "approve")
    with django_capture_on_commit_callbacks(execute=True):
        second = services.decide(req.pk, demo["rita"], "approve")
    assert second.status == "approved" and second.decided_by == demo["rita"]
    assert second.final_arguments == req.arguments
    assert resolved == [(req.pk, "approved")]  # the run wakes once, when the quorum is reached
    assert list(Decision.objects.filter(request=req).values_list("user__username", flat=True)) == ["finn", "rita"]
    decided = AuditEvent.objects.filter(request=req, action="decided").order_by("id")
    assert [(e.actor.username, e.after["approvals"], e.after["status"]) for e in decided] == [
        ("finn", 1, "pending"), ("rita", 2, "approved")]


def test_any_rejection_rejects_a_quorum(demo, finance):
    set_transfer_policy(demo, required_approvals=2)
    req = transfer_request(demo["alice"])
    services.decide(req.pk, demo["finn"], "approve")
    rejected = services.decide(req.pk, demo["rita"], "reject", feedback="Not this quarter")
    assert rejected.status == "rejected" and rejected.feedback == "Not this quarter"
    with pytest.raises(services.NotPending):
        services.decide(req.pk, demo["finn"], "approve")


def test_an_edit_withdraws_earlier_approvals(demo, finance):
    set_transfer_policy(demo, required_approvals=2)
    req = transfer_request(demo["alice"], amount=500.0)
    services.decide(req.pk, demo["finn"], "approve")
    edited = services.decide(req.pk, demo["rita"], "approve", arguments={**req.arguments, "amount": 450})
    assert edited.status == "pending" and edited.final_arguments["amount"] == 450.0
    finn_first = Decision.objects.get(request=req, user=demo["finn"])
    assert finn_first.withdrawn_at is not None  # approved 500, not 450
    rita = Decision.objects.get(request=req, user=demo["rita"])
    assert rita.arguments["amount"] == 450.0 and rita.arguments_hash == services.arguments_hash(rita.arguments)
    done = services.decide(req.pk, demo["finn"], "approve")  # approves what is proposed now: 450
    assert done.status == "modified" and done.final_arguments["amount"] == 450.0
    actions = list(AuditEvent.objects.filter(request=req).order_by("id").values_list("action", flat=True))
    assert actions == ["requested", "decided", "withdrawn", "edited", "decided", "decided"]
    withdrawn = AuditEvent.objects.get(request=req, action="withdrawn")
    assert withdrawn.before == {"approved_by": ["finn"]}
    edit = AuditEvent.objects.get(request=req, action="edited")
    assert edit.before["arguments"]["amount"] == 500.0 and edit.after["arguments"]["amount"] == 450.0


def test_an_approval_that_repeats_the_current_arguments_is_no_edit(demo, finance):
    req = transfer_request(demo["alice"])
    done = services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 500})
    assert done.status == "approved"  # 500 validates to 500.0: the same arguments
    assert not AuditEvent.objects.filter(request=req, action="edited").exists()


@pytest.mark.parametrize("amount", [True, "500", None])
def test_edited_arguments_keep_json_types_strictly(demo, finance, amount):
    """Lax validation read `"amount": true` as 1.0 (and "500" as 500): an edit moved money the
    reviewer never typed as a number."""
    req = transfer_request(demo["alice"])
    with pytest.raises(services.InvalidArguments) as exc:
        services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": amount})
    assert "amount" in exc.value.errors
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments is None


def test_the_model_is_told_exactly_what_changed_and_why_it_was_refused():
    text = agent_runner.changes_text(
        {"amount": 500.0, "currency": "USD", "recipient": {"name": "Bob", "country": "DE"}},
        {"amount": 450.0, "currency": "USD", "recipient": {"name": "Bob", "country": "FR"}},
        {"properties": {"amount": {"type": "number"}}},
    )
    assert text == ('The reviewer changed the arguments before approving (amount: 500.00 USD -> 450.00 USD; '
                    'recipient.country: "DE" -> "FR"). ')
    assert agent_runner.changes_text({"a": 1}, {"a": 1}) == ""
    # text as written, not as \u escapes (the person was retold "\u4f1a\u8bae…")
    assert agent_runner.changes_text({"subject": "Status"}, {"subject": "会议纪要 – Café"}) == (
        'The reviewer changed the arguments before approving (subject: "Status" -> "会议纪要 – Café"). ')

    class Call:
        name, feedback = "delete_file", "Keep the logs until the audit"

    refusal = agent_runner.rejection_text(Call)
    assert "explicitly rejected" in refusal and '"Keep the logs until the audit"' in refusal
    assert "do not try to reach the same goal another way unless the user explicitly tells you to" in refusal


def test_rejection_feedback_required_from_a_group_optional_for_the_requester(demo):
    req = transfer_request(demo["alice"])
    with pytest.raises(services.FeedbackRequired):
        services.decide(req.pk, demo["finn"], "reject")
    for nothing in ("\u200b", " \u2060\u200b ", "\u202e", "\ufeff"):  # nothing a reader sees is no reason
        with pytest.raises(services.FeedbackRequired):
            services.decide(req.pk, demo["finn"], "reject", feedback=nothing)
    assert services.decide(req.pk, demo["finn"], "reject", feedback="🏴\U000e0067\U000e0062\U000e0073\U000e0063"
                           "\U000e0074\U000e007f").status == "rejected"  # a flag is something
    own = services.request(tool_name="cancel_subscription", arguments={"subscription_id": "sub_123"},
                           requester=demo["alice"], verdict=policy.evaluate("cancel_subscription", {}),
                           description="Cancel sub_123", thread_ref="t-own")
    assert services.decide(own.pk, demo["alice"], "reject").status == "rejected"


# --- bulk and "always allow in this thread" -----------------------------------------------------------


def test_bulk_decide_reports_per_item(demo, finance, api):
    ok = transfer_request(demo["alice"])
    done = transfer_request(demo["alice"])
    services.decide(done.pk, demo["rita"], "approve")
    own = transfer_request(demo["finn"])  # four eyes: finn may not decide his own
    bob_only = services.request(tool_name="cancel_subscription", arguments={"subscription_id": "sub_9"},
                                requester=demo["bob"], verdict=policy.evaluate("cancel_subscription", {}),
                                description="Cancel sub_9")  # not visible to finn at all
    resp = api("finn").post("/api/approvals/bulk-decide/", {
        "ids": [ok.pk, done.pk, own.pk, bob_only.pk, "nope", ok.pk], "decision": "approve", "feedback": "batch"},
        format="json")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    by_id = {r["id"]: r for r in body["results"]}
    assert len(body["results"]) == 5 and body["succeeded"] == 1 and body["failed"] == 4  # duplicates once
    assert by_id[ok.pk] == {"id": ok.pk, "ok": True, "status": "approved"}
    assert by_id[done.pk]["code"] == "already_decided"
    assert by_id[own.pk]["code"] == "forbidden"
    assert by_id[bob_only.pk]["code"] == "not_found" and by_id["nope"]["code"] == "not_found"
    assert ApprovalRequest.objects.get(pk=ok.pk).feedback == "batch"

    reject = api("finn").post("/api/approvals/bulk-decide/", {"ids": [own.pk, transfer_request(demo["bob"]).pk],
                                                            "decision": "reject"}, format="json").json()
    assert [r["code"] for r in reject["results"]] == ["forbidden", "feedback_required"]
    assert api("finn").post("/api/approvals/bulk-decide/", {"ids": [], "decision": "approve"},
                            format="json").status_code == 400


def cancel_request(user, thread="t-grant"):
    return services.request(tool_name="cancel_subscription", arguments={"subscription_id": "sub_123"},
                            requester=user, verdict=policy.evaluate("cancel_subscription", {}),
                            description="Cancel sub_123", thread_ref=thread, run_ref="r1", tool_call_ref="c1")


def test_always_allow_in_this_thread_is_recorded_visible_and_revocable(demo, api):
    alice = api("alice")
    req = cancel_request(demo["alice"])
    resp = alice.post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "always_allow_in_thread": True},
                      format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "approved"
    grant = ThreadGrant.objects.get()
    assert (grant.tool_name, grant.thread_ref, grant.user, grant.source_request_id) == (
        "cancel_subscription", "t-grant", demo["alice"], req.pk)

    args = {"subscription_id": "sub_123"}
    here = policy.evaluate("cancel_subscription", args, {"user": demo["alice"], "thread": "t-grant"})
    assert here.action == "auto" and here.matched_rule == f"always allowed in this thread (grant {grant.pk})"
    assert policy.evaluate("cancel_subscription", args, {"user": demo["alice"], "thread": "t-other"}).action == "approve"
    assert policy.evaluate("cancel_subscription", args, {"user": demo["bob"], "thread": "t-grant"}).action == "approve"

    listed = alice.get("/api/grants/?active=true").json()["results"]
    assert [(g["tool_name"], g["thread"], g["active"]) for g in listed] == [("cancel_subscription", "t-grant", True)]
    assert api("bob").get("/api/grants/").json()["results"] == []
    assert api("bob").post(f"/api/grants/{grant.pk}/revoke/").status_code == 404

    revoked = alice.post(f"/api/grants/{grant.pk}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["active"] is False and revoked.json()["revoked_by"] == "alice"
    assert alice.post(f"/api/grants/{grant.pk}/revoke/").status_code == 409
    assert policy.evaluate("cancel_subscription", args, {"user": demo["alice"], "thread": "t-grant"}).action == "approve"
    assert ThreadGrant.objects.count() == 1  # revoked, kept
    assert list(AuditEvent.objects.filter(action__startswith="grant").order_by("id").values_list("action", flat=True)) \
        == ["grant_created", "grant_revoked"]


def test_a_changed_policy_ends_the_tools_grants(demo, api):
    """A grant waives the requester's approval under the policy of its moment: an admin who changes
    the tool's policy (here: it may now only be rejected or answered) ends its grants, and a grant
    never turns into `auto` a gate that offers no approval."""
    req = cancel_request(demo["alice"])
    assert api("alice").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "always_allow_in_thread": True},
                             format="json").status_code == 200
    grant = ThreadGrant.objects.get()
    args, here = {"subscription_id": "sub_123"}, {"user": demo["alice"], "thread": "t-grant"}
    assert policy.evaluate("cancel_subscription", args, here).action == "auto"
    services.save_policy("cancel_subscription", {"mode": "always", "approver_kind": "requester",
                                                 "allowed_decisions": ["reject", "respond"]}, demo["admin"])
    grant.refresh_from_db()
    assert grant.revoked_at is not None and grant.revoked_by == demo["admin"]
    revoked = AuditEvent.objects.get(action="grant_revoked")
    assert revoked.actor == demo["admin"] and revoked.after["reason"] == "the tool's policy changed"
    assert policy.evaluate("cancel_subscription", args, here).action == "approve"

    # and were one active all the same (made behind the services' back), it would not waive a gate without approval
    ThreadGrant.objects.create(tool_name="cancel_subscription", thread_ref="t-grant", user=demo["alice"])
    verdict = policy.evaluate("cancel_subscription", args, here)
    assert verdict.action == "approve" and verdict.allowed_decisions == ("reject", "respond")


def test_a_grant_waives_no_gate_riskier_than_the_request_it_was_given_through(demo, api):
    """A rule that routes some calls of the tool to a higher risk asks the person again for those."""
    services.save_policy("cancel_subscription", {
        "mode": "conditional", "approver_kind": "requester", "risk": "medium",
        "conditions": [{"name": "the family plan", "when": {"path": "args.subscription_id", "op": "eq",
                                                            "value": "sub_family"},
                        "action": "gate", "route": {"risk": "critical"}},
                       {"name": "the rest", "action": "gate"}]}, demo["admin"])
    req = cancel_request(demo["alice"])
    assert req.risk == "medium"
    assert api("alice").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "always_allow_in_thread": True},
                             format="json").status_code == 200
    here = {"user": demo["alice"], "thread": "t-grant"}
    assert policy.evaluate("cancel_subscription", {"subscription_id": "sub_123"}, here).action == "auto"
    family = policy.evaluate("cancel_subscription", {"subscription_id": "sub_family"}, here)
    assert (family.action, family.risk) == ("approve", "critical")


def test_always_allow_is_refused_for_group_routed_tools(demo, api):
    req = transfer_request(demo["alice"])
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/",
                            {"decision": "approve", "always_allow_in_thread": True}, format="json")
    assert resp.status_code == 400 and "always_allow_in_thread" in resp.json()
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending" and not ThreadGrant.objects.exists()


# --- deadlines ---------------------------------------------------------------------------------------


def test_timeout_rejects_by_default_and_approves_only_low_risk(demo):
    req = transfer_request(demo["alice"])
    assert req.timeout_action == "reject"
    assert (req.expires_at - req.created_at).total_seconds() == pytest.approx(
        django_settings.AGUI_DEFAULT_APPROVAL_TIMEOUT, abs=2)  # seed 003: an hour, then "no"
    services.save_policy("check_balance", {"mode": "always", "approver_kind": "requester", "risk": "low",
                                           "timeout_action": "approve", "timeout_seconds": 60}, demo["admin"])
    low = services.request(tool_name="check_balance", arguments={"account": "1234567890"}, requester=demo["alice"],
                           verdict=policy.evaluate("check_balance", {}), description="Read a balance")
    past = timezone.now() - timedelta(seconds=1)
    ApprovalRequest.objects.filter(pk__in=[req.pk, low.pk]).update(expires_at=past)
    assert services.expire(req.pk) and services.expire(low.pk)
    assert ApprovalRequest.objects.get(pk=req.pk).status == "expired"
    assert ApprovalRequest.objects.get(pk=low.pk).status == "approved"
    # a high-risk request marked "approve" on timeout (written around the validator) still rejects
    sneaky = transfer_request(demo["alice"])
    ApprovalRequest.objects.filter(pk=sneaky.pk).update(timeout_action="approve", expires_at=past)
    services.expire(sneaky.pk)
    assert ApprovalRequest.objects.get(pk=sneaky.pk).status == "expired"


def _subscribe(*groups):
    layer = get_channel_layer()

    async def setup():
        channel = await layer.new_channel()
        for group in groups:
            await layer.group_add(group, channel)
        return channel

    return layer, async_to_sync(setup)()


def _notices(layer, channel, wanted, timeout=15.0):
    """Inbox notices (what /ws/inbox/ relays) received on `channel` until `wanted` types were seen."""

    async def collect():
        seen = []
        deadline = time.monotonic() + timeout
        while not wanted <= {n["type"] for n in seen}:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                message = await asyncio.wait_for(layer.receive(channel), left)
            except TimeoutError:
                break
            seen.append(message["notice"])
        return seen

    return async_to_sync(collect)()


def _escalating_policy(demo, timeout):
    set_transfer_policy(demo, timeout_seconds=timeout, reminder_fraction=0.25,
                        escalation_group=Group.objects.get(name="oncall"), escalation_fraction=0.5)


def test_countdown_tasks_remind_escalate_and_expire(demo, celery_worker_live):
    """No beat: the countdown tasks scheduled with the request do it, on a live worker."""
    finance = Group.objects.get(name="finance")
    layer, channel = _subscribe(notify.group_for_approver_group(finance.pk),
                                notify.group_for_approver_group(Group.objects.get(name="oncall").pk))
    _escalating_policy(demo, timeout=4)
    req = transfer_request(demo["alice"])
    assert not services.can_decide(demo["admin"], req)  # oncall decides only once escalated
    wait_until(lambda: ApprovalRequest.objects.get(pk=req.pk).status == "expired", timeout=12, what="expiry")
    req.refresh_from_db()
    assert req.reminded_at >= req.remind_at and req.escalated_at >= req.escalate_at
    assert (req.decided_at - req.expires_at).total_seconds() < 5
    assert "timed out" in req.feedback
    notices = _notices(layer, channel, {"approval.reminded", "approval.escalated", "approval.expired"})
    assert {"approval.reminded", "approval.escalated", "approval.expired"} <= {n["type"] for n in notices}
    subjects = sorted((m.subject, tuple(m.to)) for m in mail.outbox)
    assert subjects == [("[agui-inbox] Approval needed: transfer_money", ("finn@example.com",)),  # with links
                        ("[agui-inbox] Escalated: transfer_money needs a decision", ("admin@example.com",)),
                        ("[agui-inbox] Reminder: transfer_money awaits your decision", ("finn@example.com",))]
    assert all("/inbox/" + req.pk in m.body for m in mail.outbox)
    actions = list(AuditEvent.objects.filter(request=req).order_by("id").values_list("action", flat=True))
    assert actions == ["requested", "reminded", "escalated", "expired"]


def test_escalation_lets_the_second_group_decide(demo):
    _escalating_policy(demo, timeout=3600)
    oncall_member = User.objects.create(username="olga", email="olga@example.com")
    oncall_member.groups.add(Group.objects.get(name="oncall"))
    req = transfer_request(demo["alice"])
    assert not services.can_decide(oncall_member, req)
    with pytest.raises(services.Forbidden):  # in the escalation group, but not escalated yet
        services.decide(req.pk, oncall_member, "approve")
    assert not selectors.visible_requests(user=oncall_member).filter(pk=req.pk).exists()
    ApprovalRequest.objects.filter(pk=req.pk).update(escalate_at=timezone.now() - timedelta(seconds=1))
    assert services.escalate(req.pk) is True and services.escalate(req.pk) is False  # once
    req.refresh_from_db()
    assert selectors.visible_requests(user=oncall_member).filter(pk=req.pk).exists()
    assert services.decide(req.pk, oncall_member, "approve").status == "approved"


def test_a_decision_asks_for_the_deciders_groups_as_it_decides(demo):
    """Whether the decider is in the request's group is read with the locked request: a membership
    given or taken a moment ago counts."""
    finance = Group.objects.get(name="finance")
    ruth = User.objects.create(username="ruth", email="ruth@example.com")
    req = transfer_request(demo["alice"])  # finance decides
    with pytest.raises(services.Forbidden):
        services.decide(req.pk, ruth, "approve")
    ruth.groups.add(finance)
    demo["finn"].groups.remove(finance)
    with pytest.raises(services.Forbidden):
        services.decide(req.pk, demo["finn"], "approve")
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    assert services.decide(req.pk, ruth, "approve").status == "approved"


@pytest.mark.slow
def test_live_beat_expires_within_five_seconds_of_the_deadline(demo, celery_worker_live, tmp_path):
    """Deadlines beyond the countdown horizon are the beat's: a real embedded beat and a real worker."""
    from celery.beat import EmbeddedService

    from agui_project.celery import app

    _escalating_policy(demo, timeout=3600)  # far: no countdown task is scheduled
    req = transfer_request(demo["alice"])
    now = timezone.now()
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=now + timedelta(seconds=1),
                                                     escalate_at=now + timedelta(seconds=2),
                                                     expires_at=now + timedelta(seconds=3))
    beat = EmbeddedService(app, thread=True, schedule_filename=str(tmp_path / "beat-schedule"))
    beat.start()
    try:
        wait_until(lambda: ApprovalRequest.objects.get(pk=req.pk).status != "pending", timeout=15, what="expiry")
    finally:
        beat.stop()
    req.refresh_from_db()
    assert req.status == "expired"
    for done, due in ((req.reminded_at, req.remind_at), (req.escalated_at, req.escalate_at),
                      (req.decided_at, req.expires_at)):
        assert done is not None and 0 <= (done - due).total_seconds() < 5
    assert len(mail.outbox) == 3  # the request mail, the reminder, the escalation


@pytest.mark.slow
def test_an_expired_request_resumes_the_run_with_timed_out_feedback(demo, celery_worker_live, api):
    set_transfer_policy(demo, timeout_seconds=2)
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    run_id = alice.post(f"/api/threads/{thread}/messages/", {
        "content": "Transfer $500 from account 1234567890 to account 0987654321"}, format="json").json()["run_id"]
    wait_for_event(thread, lambda e: e["type"] == "RUN_FINISHED" and e.get("runId") == run_id)
    call = ToolCall.objects.get(thread_id=thread)
    assert call.status == "awaiting_approval"
    wait_for_event(thread, lambda e: e["type"] == "RUN_FINISHED" and e.get("runId") != run_id)
    call.refresh_from_db()
    assert call.status == "expired"
    result = Message.objects.get(thread_id=thread, role="tool").content
    assert "timed out" in result and "not executed" in result
    assert ApprovalRequest.objects.get(pk=call.approval_id).status == "expired"


# --- races and duplicate deliveries ---------------------------------------------------------------------

on_postgres = django_settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def _race(req, users, decision_for):
    barrier = threading.Barrier(len(users))
    outcomes = {}

    def go(user):
        try:
            barrier.wait()
            services.decide(req.pk, user, decision_for(user), feedback="no")
            outcomes[user.username] = "decided"
        except services.NotPending:
            outcomes[user.username] = "conflict"
        except Exception as exc:  # surfaced in the assertion below
            outcomes[user.username] = repr(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=go, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Counter(outcomes.values())


@pytest.mark.skipif(not on_postgres, reason="needs PostgreSQL: row locks (SELECT ... FOR UPDATE) are what this "
                    "race exercises; SQLite serialises whole transactions (IMMEDIATE), so 50 writers only queue")
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_deciders_one_winner(demo, resolved):
    finance = Group.objects.get(name="finance")
    users = [User.objects.create(username=f"reviewer{i:02d}") for i in range(50)]
    finance.user_set.add(*users)
    req = transfer_request(demo["alice"])
    outcomes = _race(req, users, lambda u: "approve" if int(u.username[-2:]) % 2 else "reject")
    assert outcomes == Counter({"decided": 1, "conflict": 49}), outcomes
    assert Decision.objects.filter(request=req).count() == 1
    assert AuditEvent.objects.filter(request=req, action="decided").count() == 1
    assert resolved == [(req.pk, ApprovalRequest.objects.get(pk=req.pk).status)]

    set_transfer_policy(demo, required_approvals=2)
    quorum = transfer_request(demo["alice"])
    resolved.clear()
    outcomes = _race(quorum, users, lambda u: "approve")
    assert outcomes == Counter({"decided": 2, "conflict": 48}), outcomes
    assert ApprovalRequest.objects.get(pk=quorum.pk).status == "approved"
    assert Decision.objects.filter(request=quorum).count() == 2 and resolved == [(quorum.pk, "approved")]


def _thread_with_call(demo, status, name="send_email", arguments=None):
    from agents.models import Thread
    from agents.services import add_message

    thread = Thread.objects.create(owner=demo["alice"], agent="ops")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING)
    msg = add_message(thread, Message.Role.ASSISTANT, "", run=run)
    args = arguments or {"to": "bob@example.com", "subject": "Hi", "body": "Hello"}
    call = ToolCall.objects.create(id=f"call-{status}-{thread.pk[:8]}", thread=thread, run=run, message=msg,
                                   name=name, arguments=args, status=status)
    return thread, run, call


@pytest.mark.parametrize("status", ["rejected", "expired", "cancelled", "denied", "awaiting_approval", "executing",
                                    "succeeded"])
def test_a_call_that_is_not_claimable_never_executes(demo, status):
    thread, run, call = _thread_with_call(demo, status)
    r = agent_runner.Runner(Run.objects.select_related("thread", "thread__owner").get(pk=run.pk))
    r.execute_call(call, r.agent.tool("send_email"), call.arguments)
    assert mail.outbox == []
    assert ToolCall.objects.get(pk=call.pk).status == status
    assert not Message.objects.filter(thread=thread, role="tool").exists()


def test_a_call_of_a_run_no_longer_running_is_not_claimed(demo):
    from agents import transitions
    from agents.runtime import execution

    thread, run, call = _thread_with_call(demo, "approved")
    transitions.move_run(run.pk, Run.Status.FAILED, leaving=[Run.Status.RUNNING])
    assert execution.claim(call.pk, run.pk) is execution.RUN_LOST
    call.refresh_from_db()
    assert call.status == "approved" and call.attempts == 0 and call.claimed_at is None


@pytest.mark.skipif(not on_postgres, reason="needs PostgreSQL: the claim's row lock on its run is what this race "
                    "exercises; SQLite runs the claim's statement and recovery's transaction one after the other")
@pytest.mark.django_db(transaction=True)
def test_a_claim_waits_for_recovery_holding_its_run_and_finds_the_run_lost(demo):
    """Recovery locks the run, sees no call executing and declares the run lost; a claim of one of
    its calls in the meantime waits for that lock (FOR UPDATE in the claim's one statement) and
    then finds the run lost: the call is not claimed under a run recovery has continued."""
    from django.db import connection, connections, transaction

    from agents import transitions
    from agents.runtime import execution

    thread, run, call = _thread_with_call(demo, "approved")
    holding, release, outcome = threading.Event(), threading.Event(), {}

    def recovery():
        try:
            with transaction.atomic():
                Run.objects.select_for_update().get(pk=run.pk)
                transitions.move_run(run.pk, Run.Status.FAILED, leaving=[Run.Status.RUNNING], error_code="worker_lost")
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    def claimer():
        try:
            outcome["claim"] = execution.claim(call.pk, run.pk)
        finally:
            connections.close_all()

    held = threading.Thread(target=recovery)
    held.start()
    assert holding.wait(30)
    claiming = threading.Thread(target=claimer)
    claiming.start()
    # PostgreSQL says when the claim waits for the run's lock (not a sleep standing in for it)
    deadline, waiting = time.monotonic() + 30, False
    while not waiting and time.monotonic() < deadline and claiming.is_alive():
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                           "AND query LIKE 'UPDATE \"agents_toolcall\"%%'")
            waiting = cursor.fetchone()[0] == 1
    release.set()
    held.join(30)
    claiming.join(30)
    assert waiting and outcome == {"claim": execution.RUN_LOST}
    call.refresh_from_db()
    assert call.status == "approved" and call.attempts == 0


def test_an_approved_call_executes_once_even_when_settled_twice(demo):
    thread, run, call = _thread_with_call(demo, "approved")
    r = agent_runner.Runner(Run.objects.select_related("thread", "thread__owner").get(pk=run.pk))
    tool = r.agent.tool("send_email")
    r.execute_call(call, tool, call.arguments)
    r.execute_call(call, tool, call.arguments)
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["bob@example.com"]
    call.refresh_from_db()
    assert call.status == "succeeded" and call.attempts == 1
    assert Message.objects.filter(thread=thread, role="tool").count() == 1


def test_a_finished_call_and_its_result_for_the_model_are_written_together(demo, monkeypatch):
    """A worker that fails between the two leaves the call `executing` (recovery reports it), never
    `succeeded` without the result the model reads next."""
    from django.db import DatabaseError

    thread, run, call = _thread_with_call(demo, "approved")
    r = agent_runner.Runner(Run.objects.select_related("thread", "thread__owner").get(pk=run.pk))

    def disk_full(*args, **kwargs):
        raise DatabaseError("database or disk is full")

    monkeypatch.setattr(agent_runner, "add_message", disk_full)
    with pytest.raises(DatabaseError):
        r.execute_call(call, r.agent.tool("send_email"), call.arguments)
    assert len(mail.outbox) == 1  # the tool ran
    assert ToolCall.objects.get(pk=call.pk).status == "executing"
    assert not Message.objects.filter(thread=thread, role="tool").exists()


@pytest.mark.django_db(transaction=True)  # a real commit: the outcome is sent on it
def test_a_calls_webhook_outcome_follows_its_result_and_goes_once(demo, monkeypatch):
    """tool_outcome (the webhooks' `tool.outcome`, which reads their endpoints) waits for nothing the
    model and the chat need: it is sent after the committed result is on its way, once."""
    from approvals.signals import tool_outcome

    thread, run, call = _thread_with_call(demo, "approved")
    r = agent_runner.Runner(Run.objects.select_related("thread", "thread__owner").get(pk=run.pk))
    seen = []
    emit = r.emit
    monkeypatch.setattr(r, "emit", lambda event: (seen.append(str(event.type)), emit(event))[-1])

    def told(sender, data, **kwargs):
        assert Message.objects.filter(thread=thread, role="tool", tool_call_id=call.pk).exists()  # committed
        seen.append(f"outcome {data['outcome']}")

    tool_outcome.connect(told, weak=False)
    try:
        r.execute_call(call, r.agent.tool("send_email"), call.arguments)
    finally:
        tool_outcome.disconnect(told)
        r.stream.close()
    assert [s for s in seen if s.endswith("TOOL_CALL_RESULT") or s.startswith("outcome")] == [
        "EventType.TOOL_CALL_RESULT", "outcome succeeded"]


def test_run_agent_delivered_twice_runs_once(demo, monkeypatch):
    from agents.models import Thread

    thread = Thread.objects.create(owner=demo["alice"], agent="ops")
    run = Run.objects.create(thread=thread)
    executed = []
    monkeypatch.setattr(agent_runner.Runner, "execute", lambda self: executed.append(self.run.pk))
    assert agent_runner.run_agent(run.pk) is True
    assert agent_runner.run_agent(run.pk) is False
    assert executed == [run.pk]


@pytest.mark.slow
def test_a_task_delivered_twice_executes_nothing_twice(demo, celery_worker_live, api, settings, tmp_path):
    """send_email, approved by a reviewer: its continuation task is delivered three times at once."""
    from agents.tasks import run_agent

    settings.AGUI_SANDBOX_DIR = tmp_path
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "ops"}, format="json").json()["id"]
    run_id = alice.post(f"/api/threads/{thread}/messages/", {
        "content": "Email bob@example.com subject 'Status' saying 'All good'"}, format="json").json()["run_id"]
    run_agent.delay(run_id)  # the first run delivered twice as well
    event, _ = wait_for_event(thread, lambda e: e["type"] == "RUN_FINISHED" and e.get("runId") == run_id)
    assert "outcome" not in event  # reviewers decide: no interrupt for alice
    approval_id = ApprovalRequest.objects.get(run_ref=run_id).pk
    resp = api("rita").post(f"/api/approvals/{approval_id}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "approved"
    continuation = wait_until(lambda: Run.objects.filter(parent_run_id=run_id).first(), what="continuation")
    run_agent.delay(continuation.pk)
    run_agent.delay(continuation.pk)
    wait_for_event(thread, lambda e: e["type"] == "RUN_FINISHED" and e.get("runId") == continuation.pk)
    wait_until(lambda: Run.objects.get(pk=continuation.pk).status == "succeeded", what="continuation done")
    sent = [m for m in mail.outbox if m.to == ["bob@example.com"]]
    assert len(sent) == 1 and sent[0].subject == "Status" and sent[0].body == "All good"
    call = ToolCall.objects.get(thread_id=thread)
    assert call.status == "succeeded" and call.attempts == 1
    assert Message.objects.filter(thread_id=thread, role="tool").count() == 1
    assert Run.objects.filter(thread_id=thread).count() == 2


def test_a_deadline_saved_before_its_ceiling_is_held_to_it(demo, finance):
    """timeout_seconds had no ceiling: a policy saved with 10**12 made every call of the tool fail
    (no date that far; SQLite stored it, PostgreSQL's integer column stops at 2**31 - 1, 68 years);
    the policies now refuse it, and one already stored is held to 30 days."""
    from approvals.models import ToolPolicy
    from approvals.validators import MAX_TIMEOUT

    set_transfer_policy(demo, timeout_seconds=3600)
    ToolPolicy.objects.filter(tool_name="transfer_money").update(timeout_seconds=2 ** 31 - 1)
    before = timezone.now()
    req = transfer_request(demo["alice"])
    assert req.status == "pending"
    assert timedelta(seconds=MAX_TIMEOUT) <= req.expires_at - before <= timedelta(seconds=MAX_TIMEOUT + 60)
