import threading

import pytest
from django.contrib.auth.models import Group
from django.db import close_old_connections

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent, Decision
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


def test_request_routes_transfer_to_finance_with_deadline(demo):
    req = transfer_request(demo["alice"])
    assert req.status == "pending"
    assert req.approver_group.name == "finance"
    assert req.expires_at is not None and req.risk == "high"
    assert AuditEvent.objects.filter(request=req, action="requested").count() == 1


def test_approve_then_second_decision_conflicts(demo):
    req = transfer_request(demo["alice"])
    decided = services.decide(req.pk, demo["finn"], "approve")
    assert decided.status == "approved" and decided.final_arguments == req.arguments
    with pytest.raises(services.NotPending):
        services.decide(req.pk, demo["finn"], "reject", feedback="changed my mind")
    assert ApprovalRequest.objects.get(pk=req.pk).status == "approved"
    assert Decision.objects.filter(request=req).count() == 1


def test_what_a_decision_changes_is_stored_as_it_returns_it(demo):
    """The decided columns as stored (one UPDATE of them): the status, the edited arguments, the
    feedback, who and when, and the context an edit's objects land in."""
    req = transfer_request(demo["alice"], amount=500.0)
    decided = services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 400.0},
                              feedback="less is 'enough' %s")
    stored = ApprovalRequest.objects.select_related("decided_by").get(pk=req.pk)
    assert (stored.status, stored.final_arguments["amount"], stored.feedback, stored.decided_by) == (
        "modified", 400.0, "less is 'enough' %s", demo["finn"])
    assert stored.decided_at == decided.decided_at and stored.context == decided.context
    assert stored.final_arguments == decided.final_arguments and stored.arguments == req.arguments
    rejected = transfer_request(demo["alice"])
    services.decide(rejected.pk, demo["finn"], "reject", feedback="no")
    stored = ApprovalRequest.objects.get(pk=rejected.pk)
    assert (stored.status, stored.feedback, stored.final_arguments, stored.decided_by_id) == (
        "rejected", "no", None, demo["finn"].pk)


def test_edited_arguments_are_validated_and_recorded(demo):
    req = transfer_request(demo["alice"])
    with pytest.raises(services.InvalidArguments) as exc:
        services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": -5, "currency": "XXX"})
    assert set(exc.value.errors) == {"amount", "currency"}
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments is None
    assert not Decision.objects.filter(request=req).exists()

    decided = services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 450})
    assert decided.status == "modified"
    assert decided.final_arguments["amount"] == 450.0
    decision = Decision.objects.get(request=req)
    assert decision.arguments_hash == services.arguments_hash(decided.final_arguments)


def test_only_the_right_people_decide(demo):
    req = transfer_request(demo["alice"])
    for user in ("alice", "bob", "rita"):  # requester, another end user, a reviewer outside finance
        with pytest.raises(services.Forbidden):
            services.decide(req.pk, demo[user], "approve")
    own = transfer_request(demo["finn"])  # four eyes: finn is in finance but asked for it himself
    with pytest.raises(services.Forbidden):
        services.decide(own.pk, demo["finn"], "approve")
    assert ApprovalRequest.objects.filter(status="pending").count() == 2


def test_group_rejection_needs_feedback(demo):
    req = transfer_request(demo["alice"])
    with pytest.raises(services.FeedbackRequired):
        services.decide(req.pk, demo["finn"], "reject", feedback="  ")
    rejected = services.decide(req.pk, demo["finn"], "reject", feedback="Wrong account")
    assert rejected.status == "rejected" and rejected.feedback == "Wrong account"


def test_expire_only_after_deadline(demo):
    from datetime import timedelta

    from django.utils import timezone

    req = transfer_request(demo["alice"])
    assert services.expire(req.pk) is False
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.expire(req.pk) is True
    req.refresh_from_db()
    assert req.status == "expired" and "timed out" in req.feedback
    with pytest.raises(services.NotPending):
        services.decide(req.pk, demo["finn"], "approve")


@pytest.mark.django_db(transaction=True)
def test_racing_deciders_exactly_one_wins(demo):
    demo["rita"].groups.add(demo["finn"].groups.get(name="finance"))
    req = transfer_request(demo["alice"])
    barrier = threading.Barrier(2)
    outcomes = {}

    def decide(username, decision):
        try:
            barrier.wait()
            services.decide(req.pk, demo[username], decision, feedback="no")
            outcomes[username] = "won"
        except services.NotPending:
            outcomes[username] = "conflict"
        finally:
            close_old_connections()

    threads = [threading.Thread(target=decide, args=a) for a in (("finn", "approve"), ("rita", "reject"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes.values()) == ["conflict", "won"]
    req.refresh_from_db()
    assert Decision.objects.filter(request=req).count() == 1
    assert req.status == ("approved" if outcomes["finn"] == "won" else "rejected")


def test_a_late_decision_is_refused_and_the_expiry_it_found_stays(demo, django_capture_on_commit_callbacks):
    """Deciding past the deadline (before the sweep came by) expires the request for good: the
    refusal must not roll the expiry back with it."""
    from datetime import timedelta

    from django.utils import timezone

    from approvals.models import AuditEvent, Decision

    req = transfer_request(demo["alice"])
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(services.NotPending, match="expired"):
        services.decide(req.pk, demo["finn"], "approve")
    req.refresh_from_db()
    assert req.status == "expired" and "timed out" in req.feedback and req.decided_by is None
    assert not Decision.objects.filter(request=req).exists()
    assert list(AuditEvent.objects.filter(request=req).order_by("id").values_list("action", flat=True)) == [
        "requested", "expired"]
    assert callbacks  # the run is told (approval_resolved, notices) once this commits


def test_a_late_answer_over_ag_ui_refuses_the_resume_and_the_expiry_stays(demo):
    """AG-UI resume answers every interrupt in one transaction; one past its deadline refuses them
    all (`expired`), and that request is expired for good, not rolled back with the rest."""
    from datetime import timedelta

    from django.utils import timezone

    from agents import services as agent_services
    from agents.models import Run
    from approvals import policy

    alice = demo["alice"]
    thread = agent_services.create_thread(alice, "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)
    args = {"subscription_id": "sub_123"}
    req = services.request(tool_name="cancel_subscription", arguments=args, requester=alice,
                           verdict=policy.evaluate("cancel_subscription", args), description="Cancel sub_123",
                           thread_ref=thread.pk, run_ref=run.pk, tool_call_ref="call-late")
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(agent_services.ResumeError) as refused:
        agent_services.apply_resume(thread, alice, [(req.pk, "resolved", {"approved": True})], "run-late")
    assert refused.value.code == "expired"
    req.refresh_from_db()
    assert req.status == "expired"
    assert not Run.objects.filter(pk="run-late").exists()


def test_a_near_deadline_gets_its_countdown_task_by_name(demo, monkeypatch, django_capture_on_commit_callbacks):
    """services enqueue approvals.tasks.deadline_due by name (no import of tasks: no cycle); the name
    must resolve to the task, with the request's id and each near moment as its ETA."""
    from approvals import policy, tasks

    sent = []
    monkeypatch.setattr(tasks.deadline_due, "apply_async",
                        lambda args=None, kwargs=None, **options: sent.append((args, options["eta"])))
    services.save_policy("transfer_money", {"mode": "always", "approver_group": Group.objects.get(name="finance"),
                                            "risk": "high", "timeout_seconds": 60}, demo["admin"])
    args = {"from_account": "1234567890", "to_account": "0987654321", "amount": 500.0, "currency": "USD"}
    with django_capture_on_commit_callbacks(execute=True):
        req = services.request(tool_name="transfer_money", arguments=args, requester=demo["alice"],
                               verdict=policy.evaluate("transfer_money", args), description="Transfer")
    assert services.DEADLINE_TASK == tasks.deadline_due.name
    assert sorted(sent, key=lambda s: s[1]) == [((req.id,), req.remind_at), ((req.id,), req.expires_at)]
