"""A worker that dies while a tool runs: recovery asks the tool's own records first (tools.tool's
`outcome`). A transfer killed after its commit moved the money: it used to read `outcome_unknown`
(the model told to have the person check, the operators mailed) though its Transfer row said what
it did; one killed before its commit moved nothing: it was never run, though it could safely be."""

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from agents import services, tasks
from agents.catalog import banking
from agents.catalog.models import Account, Transfer
from agents.models import Message, Run, Thread, ToolCall
from agents.runtime import execution, runner
from agents.runtime.events import redis_client
from approvals import services as approval_services
from approvals.models import ApprovalRequest, AuditEvent
from tests.conftest import stream_events

pytestmark = [pytest.mark.django_db(transaction=True)]
TRANSFER = {"from_account": "1234567890", "to_account": "0987654321", "currency": "USD", "amount": 75}


class WorkerKilled(BaseException):
    """What SIGKILL leaves, in one process: nothing after this point runs (no result, no finish)."""


def approved_transfer(demo, fake_llm, monkeypatch):
    """alice's transfer, approved by finance, its continuation made but not run: (paused run, its
    continuation's id)."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    woken = []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", woken.append)
    fake_llm.push({"text": "It goes to finance.", "tool_calls": [
        {"id": "call-recorded", "name": "transfer_money", "arguments": json.dumps(TRANSFER)}]})
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    paused = services.start_run(thread, demo["alice"], "Pay 75")
    assert runner.run_agent(paused.pk) and Run.objects.get(pk=paused.pk).status == "interrupted"
    approval_services.decide(ApprovalRequest.objects.get(run_ref=paused.pk).pk, demo["finn"], "approve")
    return paused, woken


def die_in_the_tool(monkeypatch, woken, after_commit):
    """The continuation's worker runs the transfer and dies after its commit (the money moved, no
    result written) or inside its transaction (rolled back); then its claim and the run look a lease
    old, with no lease left in Redis, as a dead worker leaves them."""
    if after_commit:
        def dead(*args, **kwargs):
            raise WorkerKilled()
        monkeypatch.setattr(execution, "finish", dead)
    else:
        real_create = Transfer.objects.create

        def dead(**fields):
            real_create(**fields)
            raise WorkerKilled()
        monkeypatch.setattr(Transfer.objects, "create", dead)
    with pytest.raises(WorkerKilled):
        tasks.continue_decided(woken[0])
    monkeypatch.undo()
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    call = ToolCall.objects.get(pk="call-recorded")
    assert call.status == "executing"
    hour_ago = timezone.now() - timedelta(hours=1)
    ToolCall.objects.filter(pk=call.pk).update(claimed_at=hour_ago)
    Run.objects.filter(status="running").update(started_at=hour_ago)
    redis_client().set(execution.LEASES_SINCE_KEY, int(redis_client().time()[0]) * 1000 - 3_600_000)
    mail.outbox.clear()  # finance's notice of the request


def test_a_transfer_killed_after_its_commit_is_settled_from_its_record(demo, fake_llm, monkeypatch):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    before = Account.objects.get(number="1234567890").balance
    die_in_the_tool(monkeypatch, woken, after_commit=True)
    assert Transfer.objects.count() == 1
    continuation = Run.objects.get(parent_run=paused)

    assert execution.recover_stuck_calls() == {"call-recorded": "succeeded"}
    assert execution.recover_stuck_calls() == {}
    call = ToolCall.objects.get(pk="call-recorded")
    assert call.status == "succeeded"
    assert call.result.startswith("Transferred 75.00 USD from 1234567890 to 0987654321 (read back")
    told = Message.objects.get(role="tool", tool_call_id=call.pk)
    assert told.content == call.result and told.run_id == continuation.pk
    lost = Run.objects.get(pk=continuation.pk)
    assert (lost.status, lost.error_code) == ("failed", "worker_lost")
    assert lost.error == ("The worker stopped while transfer_money was running; it had taken effect, as its "
                          "records show, and it was not repeated.")
    assert [e["message"] for e in stream_events(paused.thread_id) if e["type"] == "RUN_ERROR"] == [lost.error]
    audit = AuditEvent.objects.get(object_ref=f"toolcall:{call.pk}", action="outcome_reported")
    assert audit.after == {"status": "succeeded", "read_from": "the tool's records"}
    assert not AuditEvent.objects.filter(action="outcome_unknown").exists()
    assert mail.outbox == []  # nothing unknown for the operators to check

    # the next run answers from the result; nothing runs the transfer again
    fake_llm.push({"text": "The 75 USD went through."})
    answering = Run.objects.get(parent_run=continuation)
    assert runner.run_agent(answering.pk)
    assert Run.objects.get(pk=answering.pk).status == "succeeded"
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": call.pk, "content": call.result}
    assert Transfer.objects.count() == 1
    assert Account.objects.get(number="1234567890").balance == before - Decimal("75.00")


def test_a_transfer_killed_before_its_commit_is_run_again_once(demo, fake_llm, monkeypatch):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    before = Account.objects.get(number="1234567890").balance
    die_in_the_tool(monkeypatch, woken, after_commit=False)
    assert not Transfer.objects.exists()  # rolled back with the balances
    continuation = Run.objects.get(parent_run=paused)

    assert execution.recover_stuck_calls() == {"call-recorded": "retry"}
    assert ToolCall.objects.get(pk="call-recorded").status == "approved"
    assert Run.objects.get(pk=continuation.pk).error == (
        "The worker stopped while transfer_money was running; it had not taken effect, as its records show, and it "
        "will be run again.")
    audit = AuditEvent.objects.get(action="retried")
    assert audit.after == {"status": "approved", "reason": "its records show no effect: run again"}

    fake_llm.push({"text": "Done."})
    again = Run.objects.get(parent_run=continuation)
    assert runner.run_agent(again.pk)
    call = ToolCall.objects.get(pk="call-recorded")
    assert (call.status, call.attempts) == ("succeeded", 2)
    assert [t.amount for t in Transfer.objects.all()] == [Decimal("75.00")]
    assert Account.objects.get(number="1234567890").balance == before - Decimal("75.00")
    assert mail.outbox == []


def test_a_transfer_killed_before_its_commit_in_a_stopped_run_is_reported_not_executed(demo, fake_llm, monkeypatch):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    die_in_the_tool(monkeypatch, woken, after_commit=False)
    continuation = Run.objects.get(parent_run=paused)
    Run.objects.filter(pk=continuation.pk).update(status="cancelled")  # the person pressed Stop meanwhile

    assert execution.recover_stuck_calls() == {"call-recorded": "failed"}
    call = ToolCall.objects.get(pk="call-recorded")
    assert call.status == "failed" and call.result.startswith("Error: transfer_money was not executed")
    assert Message.objects.get(role="tool", tool_call_id=call.pk).content == call.result
    assert not Transfer.objects.exists()
    assert not Run.objects.filter(parent_run=continuation).exists()  # nothing runs it


def test_records_that_cannot_be_read_leave_the_outcome_unknown(demo, fake_llm, monkeypatch):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    die_in_the_tool(monkeypatch, woken, after_commit=True)

    def unreadable(*args):
        raise RuntimeError("the bank's records are away")
    tool = banking.transfer_money
    monkeypatch.setattr(tool, "outcome", unreadable)
    assert execution.recover_stuck_calls() == {"call-recorded": "outcome_unknown"}
    assert ToolCall.objects.get(pk="call-recorded").status == "outcome_unknown"
    assert Transfer.objects.count() == 1  # not repeated
