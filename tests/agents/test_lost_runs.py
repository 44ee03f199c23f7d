"""A worker stuck long enough for recovery to declare its run lost never writes that run back,
and never starts a tool's side effect afterwards; a saved rule cannot be what sticks it."""

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from agents import services
from agents.models import Run, Thread, ToolCall
from agents.runtime import execution, runner
from approvals import policy
from people.models import Profile
from tests.conftest import stream_events

ROOT = Path(__file__).resolve().parents[2]
SINCE = "agui:leases:since"  # execution.LEASES_SINCE_KEY
pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_backtracking_pattern_runs_in_linear_time():
    """`^(\\w+\\s?)*$` against 40 word characters and a '!' takes Python's `re` about 2^40 steps;
    RE2 answers at once. In a child process, so the old engine's hang cannot hold this one."""
    code = ("from approvals import rules; "
            "cond = {'path': 'args.note', 'op': 'matches', 'value': r'^(\\w+\\s?)*$'}; "
            "print(rules.holds(cond, {'args': {'note': 'a' * 40 + '!'}}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_patterns_the_linear_engine_cannot_run_are_refused_when_saved(demo):
    from django.core.exceptions import ValidationError

    from approvals import services as approval_services

    with pytest.raises(ValidationError) as exc:
        approval_services.save_policy("write_file", {
            "mode": "conditional", "approver_kind": "requester",
            "conditions": [{"name": "twice", "when": {"path": "args.content", "op": "matches", "value": r"(a)\1"},
                            "action": "deny"}]}, demo["admin"])
    assert "backreferences" in str(exc.value)


def test_a_run_declared_lost_is_not_written_back_and_its_tool_never_acts(demo, fake_llm, settings, tmp_path,
                                                                         monkeypatch):
    settings.AGUI_SANDBOX_DIR = tmp_path
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    Profile.objects.update_or_create(user=demo["alice"], defaults={"language": "fr"})
    thread = Thread.objects.create(owner=demo["alice"], agent="ops")
    fake_llm.push({"tool_calls": [{"id": "c-write", "name": "write_file",
                                   "arguments": json.dumps({"path": "/late.txt", "content": "written late"})}]},
                  "Done.")
    run = services.start_run(thread, demo["alice"], "write late.txt")
    # claimed as run_agent would, but without the lease a live worker renews
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(hours=1))

    real_evaluate = policy.evaluate

    def stuck_then_evaluate(*args, **kwargs):
        # while this worker is "stuck" (no lease: nobody renews it), the beat declares the run lost
        assert execution.recover_stuck_runs() == [run.pk]
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(policy, "evaluate", stuck_then_evaluate)
    runner.Runner(Run.objects.select_related("thread", "thread__owner").get(pk=run.pk)).execute()

    lost = Run.objects.get(pk=run.pk)
    assert lost.status == "failed" and lost.error_code == "worker_lost"  # not written back to succeeded
    # said to alice in her language, though the beat that declared it has no request to take one from
    assert lost.error.startswith("Le worker qui préparait cette réponse s’est arrêté")
    assert not list(tmp_path.rglob("late.txt"))  # the side effect never started, in any sandbox
    assert ToolCall.objects.get(pk="c-write").status == "proposed"  # never claimed
    ends = [e["type"] for e in stream_events(thread.pk) if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    assert ends == ["RUN_ERROR"]  # recovery's worker_lost; the stuck worker adds no RUN_FINISHED
    assert Run.objects.filter(parent_run=lost).count() == 1  # one continuation answers instead


def test_a_live_run_whose_lease_a_redis_restart_emptied_is_not_declared_lost(demo, settings):
    """Seen live: Redis killed and restarted empty 36 s into a 70 s answer; 4 s later the beat's
    recovery found no lease and failed the run (worker_lost) while its worker was still streaming,
    and a continuation answered a second time. A live holder writes its key again within a third
    of a lease, so recovery waits a lease length once Redis's data is new."""
    from agents.runtime import leases
    from agents.runtime.events import redis_client

    settings.AGUI_TOOL_LEASE_SECONDS = 30
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(minutes=1))
    client = redis_client()
    with execution.run_lease(run.pk):
        assert leases._keeper.drain(due=True)  # the live worker's lease, written
        assert execution.recover_stuck_runs() == []
        client.delete(execution.run_lease_key(run.pk), SINCE)  # Redis restarted, empty
        assert execution.recover_stuck_runs() == []  # the holder has not written again yet: not lost
        assert execution.recover_stuck_runs() == []
        assert Run.objects.get(pk=run.pk).status == "running"
    # a lease length on, a lease still missing is a dead holder's again
    client.set(SINCE, int(client.time()[0]) * 1000 - 31_000)
    assert execution.recover_stuck_runs() == [run.pk]


def test_a_request_its_lost_worker_filed_before_pausing_is_withdrawn_not_left_to_reviewers(demo, fake_llm,
                                                                                          monkeypatch):
    """Before: recovery failed the run and started its continuation, and left the request pending. A
    reviewer's approval then moved the call to approved with no run to carry it out (the run had
    its one continuation already): never executed, the decision silently void; meanwhile the model,
    not told of the call, could ask for it again as a second request."""
    from agents.models import Message
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest
    from tests.helpers import paused_transfer, run_continuation

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    run, req = paused_transfer(demo["alice"], "call-filed")  # filed; the worker died before pausing
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(hours=1))
    assert execution.recover_stuck_runs() == [run.pk]
    req.refresh_from_db()
    assert req.status == "cancelled"
    assert ToolCall.objects.get(pk="call-filed").status == "cancelled"  # its continuation tells the model
    with pytest.raises(approval_services.NotPending):
        approval_services.decide(req.pk, demo["finn"], "approve")
    assert Run.objects.filter(parent_run=run).count() == 1
    assert ApprovalRequest.objects.filter(run_ref=run.pk, status="pending").count() == 0
    fake_llm.push("It was not sent; ask me again if you still want it.")
    assert run_continuation(run).status == "succeeded"  # a conversation the model accepts (the fake checks)
    told = Message.objects.get(role="tool", tool_call_id="call-filed")
    assert "cancelled and not executed" in told.content


def _continuation_running_a_call(demo, agent, tool, claimed_ago):
    """A run paused on `tool`, approved, whose continuation (its worker since dead: no lease) claimed
    the call `claimed_ago` ago: (paused run, continuation, call)."""
    from agents.runtime.events import redis_client

    redis_client().set(SINCE, int(redis_client().time()[0]) * 1000 - 3_600_000)  # not a fresh Redis
    thread = Thread.objects.create(owner=demo["alice"], agent=agent)
    paused = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)
    msg = services.add_message(thread, "assistant", "", run=paused, tool_calls=[
        {"id": f"call-{agent}", "type": "function", "function": {"name": tool, "arguments": "{}"}}])
    call = ToolCall.objects.create(id=f"call-{agent}", run=paused, thread=thread, message=msg, name=tool, arguments={},
                                   status=ToolCall.Status.EXECUTING, attempts=1,
                                   claimed_at=timezone.now() - claimed_ago)
    continuation = Run.objects.create(thread=thread, parent_run=paused, status=Run.Status.RUNNING,
                                      started_at=timezone.now() - timedelta(hours=1))
    return paused, continuation, call


def test_a_continuation_lost_mid_call_is_the_calls_run_for_recovery(demo, monkeypatch):
    """An approved call is run by its paused run's continuation, but the call's row names the paused
    run. Recovery read that run, saw it not running, and left the continuation to the stalled-run
    sweep: that sweep, blind to the call too, failed it as lost mid-answer ("the agent answers again")
    and started a next run while the call was still executing, within a lease of the call's claim
    before the call itself was reported (the model then read a call without a result); the user never
    heard the call's fate, and an idempotent call was never retried."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    # a tool that keeps no record of its calls (a transfer's row tells: tests/agents/test_recorded_outcomes.py)
    paused, continuation, call = _continuation_running_a_call(demo, "banking", "cancel_subscription", timedelta(0))
    assert execution.recover_stuck_runs() == []  # its call is still within its lease: the call's to settle

    ToolCall.objects.filter(pk=call.pk).update(claimed_at=timezone.now() - timedelta(hours=1))
    assert execution.recover_stuck_calls() == {call.pk: "outcome_unknown"}
    lost = Run.objects.get(pk=continuation.pk)
    assert (lost.status, lost.error_code) == ("failed", "worker_lost")
    assert lost.error == ("The worker stopped while cancel_subscription was running; its outcome is unknown and it "
                          "was not repeated.")
    assert [e["message"] for e in stream_events(paused.thread_id) if e["type"] == "RUN_ERROR"] == [lost.error]
    told = paused.thread.messages.get(role="tool", tool_call_id=call.pk)
    assert told.run_id == continuation.pk and "was not run again" in told.content
    assert Run.objects.get(pk=paused.pk).status == "interrupted"
    assert Run.objects.filter(parent_run=continuation).count() == 1  # one run answers the person
    assert execution.recover_stuck_runs() == []


def test_an_idempotent_call_a_lost_continuation_ran_is_run_again(demo, monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    paused, continuation, call = _continuation_running_a_call(demo, "support", "lookup_order_details",
                                                              timedelta(hours=1))
    assert execution.recover_stuck_calls() == {call.pk: "retry"}
    assert ToolCall.objects.get(pk=call.pk).status == "approved"  # the next run's settle runs it
    assert Run.objects.get(pk=continuation.pk).error_code == "worker_lost"
    assert Run.objects.filter(parent_run=continuation).count() == 1


def test_a_continuation_that_fails_mid_settle_leaves_no_approved_call_behind(demo, fake_llm, monkeypatch):
    """Two transfers finance approved; the continuation runs the first, then Redis has been away past
    the retries (the event writer's error surfaces at the first result) and the run fails. The second
    call stayed `approved` with no run to execute it: the inbox and webhooks said approved, the model
    never heard of it, and whichever continuation came next on the thread (another decision, days
    later) would have moved the money then. Now it fails as not executed, and says so."""
    from agents import tasks
    from agents.catalog.models import Transfer
    from agents.models import Message
    from agents.runtime.events import StreamUnavailable
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    woken = []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", woken.append)
    transfer = {"from_account": "1234567890", "to_account": "0987654321", "currency": "USD"}
    fake_llm.push({"text": "Both go to finance.", "tool_calls": [
        {"id": f"call-pay-{n}", "name": "transfer_money", "arguments": json.dumps({**transfer, "amount": n})}
        for n in (3, 4)]})
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    paused = services.start_run(thread, demo["alice"], "Pay 3 and 4")
    assert runner.run_agent(paused.pk) and Run.objects.get(pk=paused.pk).status == "interrupted"
    for request in ApprovalRequest.objects.filter(run_ref=paused.pk):
        approval_services.decide(request.pk, demo["finn"], "approve")

    real_result = runner.Runner.result

    def redis_gone_by_then(self, tc, *args, **kwargs):
        real_result(self, tc, *args, **kwargs)
        raise StreamUnavailable("events could not be written: Redis away past the retries")

    monkeypatch.setattr(runner.Runner, "result", redis_gone_by_then)
    for request_id in woken:  # the worker's wake-up of each decision; the last runs the continuation
        tasks.continue_decided(request_id)
    continuation = Run.objects.get(parent_run=paused)
    assert (continuation.status, continuation.error_code) == ("failed", "stream_unavailable")
    assert Transfer.objects.count() == 1
    statuses = dict(ToolCall.objects.filter(thread=thread).values_list("pk", "status"))
    assert statuses == {"call-pay-3": "succeeded", "call-pay-4": "failed"}  # was: call-pay-4 approved
    told = Message.objects.get(thread=thread, role="tool", tool_call_id="call-pay-4")
    assert told.run_id == continuation.pk and "was not executed" in told.content


def test_a_live_run_whose_lease_lapsed_while_redis_was_out_of_reach_is_not_declared_lost(demo, settings):
    """Redis out of reach for 40 s (a restart from its snapshot, a network cut) with its data kept: the
    live worker's renewals failed and its lease lapsed, and the sweep that reached Redis first failed
    the run (worker_lost) while the worker was still answering, and a continuation answered again.
    Recovery now reads the sweeps' silence as such an outage and waits a lease, as after a restart."""
    from agents.runtime.events import redis_client

    settings.AGUI_TOOL_LEASE_SECONDS = 30
    client = redis_client()
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(minutes=5))
    now_ms = int(client.time()[0]) * 1000
    client.set(SINCE, now_ms - 3_600_000)  # the data is old: it was kept
    client.set(execution.LEASES_SWEPT_KEY, now_ms - 40_000)  # the last sweep that reached Redis
    assert execution.recover_stuck_runs() == []  # its holder has not written again yet: not lost
    assert execution.recover_stuck_runs() == []
    assert Run.objects.get(pk=run.pk).status == "running"
    # a lease length on, a lease still missing is a dead holder's again
    client.set(SINCE, now_ms - 31_000)
    assert execution.recover_stuck_runs() == [run.pk]


def test_sweeps_as_often_as_the_beat_sends_them_trust_the_leases(demo, settings):
    from agents.runtime.events import redis_client

    settings.AGUI_TOOL_LEASE_SECONDS = 30
    client = redis_client()
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(minutes=5))
    client.set(execution.LEASES_SWEPT_KEY, int(client.time()[0]) * 1000 - 18_000)  # the beat's 10 s, late in a busy queue
    assert execution.recover_stuck_runs() == [run.pk]


def test_a_sweep_with_nothing_to_judge_waits_without_a_warning(demo, settings, caplog):
    """Each sweep is noted (a silence is an outage), so the beat's sweeps of a fresh Redis warned
    "recovery waits: Redis's data is younger than a lease" every 10 s for the first lease after every
    start, with no run or call to wait for; the warning is for a sweep that has some."""
    import logging

    from agents.runtime.events import redis_client

    settings.AGUI_TOOL_LEASE_SECONDS = 30
    redis_client().delete(SINCE)  # a fresh Redis (the suite's fixture has it long known)
    with caplog.at_level(logging.WARNING, logger="agents.runtime.execution"):
        assert execution.stuck_call_ids() == [] and execution.recover_stuck_runs() == []  # nothing stuck
        assert not [r for r in caplog.records if "recovery waits" in r.getMessage()]
        thread = Thread.objects.create(owner=demo["alice"], agent="banking")
        Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(minutes=1))
        assert execution.recover_stuck_runs() == []  # one to judge: it waits, and says why
        assert [r for r in caplog.records if "recovery waits" in r.getMessage()]


@pytest.mark.parametrize("stuck_in", ["the model's answer", "the policy"])
def test_a_worker_woken_after_its_run_was_taken_over_files_no_request_and_stores_no_answer(
        demo, fake_llm, monkeypatch, stuck_in):
    """Seen with a worker paused (SIGSTOP) past its lease, then woken: its run was declared lost and
    continued elsewhere, and it went on with the dead run: a second answer stored, a second request
    for the same transfer, whose approval the next continuation on the thread executed (two
    transfers for one). What it would write now is refused, and it stops."""
    from agents.models import Message
    from approvals.models import ApprovalRequest

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "c-zombie", "name": "transfer_money", "arguments": json.dumps(
        {"from_account": "1234567890", "to_account": "0987654321", "amount": 300, "currency": "USD"})}]})
    run = services.start_run(thread, demo["alice"], "Transfer $300 from account 1234567890 to account 0987654321")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, started_at=timezone.now() - timedelta(hours=1))

    def taken_over():  # while this worker is stuck (no lease: nobody renews it), the beat declares the run lost
        assert execution.recover_stuck_runs() == [run.pk]

    if stuck_in == "the model's answer":
        streamed = runner.Runner.stream_model
        monkeypatch.setattr(runner.Runner, "stream_model",
                            lambda self, messages: (streamed(self, messages), taken_over())[0])
    else:
        evaluate = policy.evaluate
        monkeypatch.setattr(policy, "evaluate", lambda *a, **k: (taken_over(), evaluate(*a, **k))[1])
    runner.Runner(Run.objects.select_related("thread", "thread__owner").get(pk=run.pk)).execute()

    assert Run.objects.get(pk=run.pk).status == "failed"
    assert not ApprovalRequest.objects.filter(run_ref=run.pk).exists()  # nobody is asked about a dead run's call
    stored = Message.objects.filter(run=run, role="assistant").count()
    assert stored == (0 if stuck_in == "the model's answer" else 1)  # its answer, once (stored before it stuck)
    assert not ToolCall.objects.filter(run=run).exclude(status="proposed").exists()
    assert Run.objects.filter(parent_run_id=run.pk).count() == 1
    assert services.cancel_requested(run.pk)  # and the flag that stops a stuck worker's stream when it wakes
