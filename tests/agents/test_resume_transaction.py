"""An AG-UI resume records its answers, their calls' fates and the continuation in one transaction
(agents/services.apply_resume): all of it or, on any refusal or failure, none of it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents import services, transitions
from agents.models import Run, ToolCall
from approvals.models import ApprovalRequest, AuditEvent, Decision
from approvals.signals import approval_resolved
from tests.agents.test_request_queries import paused_on_the_requester

pytestmark = pytest.mark.django_db(transaction=True)


def _approve(thread, user, req, run_id="run-resumed"):
    return services.apply_resume(thread, user, [(req.pk, "resolved", {"approved": True})], run_id)


def test_a_resume_decides_and_continues_its_run_in_the_answers_transaction(demo, fake_llm):
    thread, paused, req = paused_on_the_requester(demo, fake_llm)
    sent = []

    def heard(sender, request, **kwargs):
        sent.append(request.pk)

    approval_resolved.connect(heard)
    try:
        (answered,), _questions = _approve(thread, demo["alice"], req)
    finally:
        approval_resolved.disconnect(heard)
    assert answered.status == ApprovalRequest.Status.APPROVED
    # made with the answers, not by a wake-up after their commit (approval_resolved's signal, which
    # would look for the call again in a transaction of its own)
    assert sent == []
    continuation = Run.objects.get(parent_run=paused)
    assert continuation.pk == "run-resumed" and continuation.status == Run.Status.QUEUED and continuation.stream_id
    assert ToolCall.objects.get(pk="call_cs").status == ToolCall.Status.APPROVED


def test_a_resume_whose_continuation_fails_records_no_answer(demo, fake_llm, monkeypatch):
    thread, paused, req = paused_on_the_requester(demo, fake_llm)

    def broken(*args, **kwargs):
        raise RuntimeError("the continuation could not be made")

    monkeypatch.setattr(transitions, "start_continuation", broken)
    with pytest.raises(RuntimeError):
        _approve(thread, demo["alice"], req)
    # the client is told it failed, and it did: the request still waits for the same answer
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.PENDING and not Decision.objects.filter(request=req).exists()
    assert ToolCall.objects.get(pk="call_cs").status == ToolCall.Status.AWAITING_APPROVAL
    assert Run.objects.get(pk=paused.pk).resume_run_id == ""
    monkeypatch.undo()
    (answered,), _questions = _approve(thread, demo["alice"], req)
    assert answered.status == ApprovalRequest.Status.APPROVED and Run.objects.filter(parent_run=paused).exists()


def test_a_resume_after_the_deadline_is_refused_and_the_request_expires(demo, fake_llm):
    thread, paused, req = paused_on_the_requester(demo, fake_llm)
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(services.ResumeError) as refused:
        _approve(thread, demo["alice"], req)
    assert refused.value.code == "expired"
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.EXPIRED and not Decision.objects.filter(request=req).exists()
    assert list(AuditEvent.objects.filter(request=req).order_by("created_at", "pk").values_list("action", flat=True)) == ["requested", "expired"]
    # the expiry wakes the run as any expiry does: its call is expired and the run goes on
    assert ToolCall.objects.get(pk="call_cs").status == ToolCall.Status.EXPIRED
    assert Run.objects.filter(parent_run=paused).exists()
