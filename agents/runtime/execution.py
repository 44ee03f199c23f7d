"""Each tool call executes at most once (DESIGN.md step 7).

- claim(): the conditional update proposed|approved -> executing that precedes the side effect;
  a second delivery of the same work finds nothing to claim.
- lease(): while the tool runs, its worker renews a short Redis key. A call still `executing`
  whose lease lapsed belongs to a dead worker (killed, OOM, power loss).
- recover_stuck_calls() (beat): a tool that keeps records of what it did (tools.tool's `outcome`)
  is asked first: a call its records show done is settled with what they say; one they show not
  done is run again (or, with no run left to run it, reported not executed). Otherwise the call
  becomes `outcome_unknown` (the model hears it as the call's result; operators get mail, an inbox
  notice and an audit row) and is never repeated, unless its tool is declared idempotent=True: then
  it goes back to `approved` and runs again (at most AGUI_TOOL_MAX_ATTEMPTS claims, as a rerun
  from records). Either way the dead run ends with RUN_ERROR (worker_lost) and one continuation run
  picks the thread up.
"""

import functools
import logging
import uuid
from contextlib import contextmanager
from datetime import timedelta

import redis
from ag_ui.core import RunErrorEvent
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents import dispatch, selectors
from agents import services as agent_services
from agents.messages import add_message
from agents.models import Message, Run, ToolCall
from agents.registry import get_agent
from agents.runtime import events
from agents.runtime.leases import RENEW_EVERY, hold
from agents.runtime.tools import NOT_DONE
from agents.transitions import claim_call, move_call, move_run, start_continuation
from agui_project.celery import SWEPT_KEY
from agui_project.queries import Prepared, one
from approvals import mail as approval_mail
from approvals import notify as approval_notify
from approvals import services as approval_services
from approvals.models import ApprovalRequest, AuditEvent
from approvals.signals import tool_outcome

log = logging.getLogger(__name__)


def lease_key(call_id):
    return f"agui:toolcall:{call_id}:lease"


RUN_LOST = "run_lost"
OWNER_OFF = "owner_off"
# whether the run still runs, after a claim found nothing: compiled once (agui_project/queries.Prepared)
_RUNNING = Prepared(Run, lambda pk: Run.objects.filter(pk=pk, status=Run.Status.RUNNING).only("pk"))
# whether the call's chat owner is switched off, after a claim found nothing (one read, never on a claim made)
_OWNER_OFF = Prepared(ToolCall, lambda pk: ToolCall.objects.filter(pk=pk, thread__owner__is_active=False).only("pk"))


def claim(call_id, run_id):
    """proposed|approved -> executing, at the moment of acting, while `run_id` (the run executing
    it) is still running: True; False when someone else got the call first; RUN_LOST when the
    run is no longer this worker's (recovery declared it lost while it was stuck); OWNER_OFF when
    the chat's owner, whom the tool would act as, is switched off (the call is left unclaimed for
    the caller to settle). The run's row is locked for the claim, as recovery locks it to declare
    it lost, so the two never cross (transitions.claim_call: one statement); which of them refused
    is read only when one did."""
    if claim_call(call_id, run_id, timezone.now()):
        return True
    if _RUNNING.one(run_id) is None:
        return RUN_LOST
    return OWNER_OFF if _OWNER_OFF.one(call_id) is not None else False


def finish(call_id, status, output, call=None, tell=True):
    """executing -> succeeded|failed. False when recovery already declared the outcome unknown:
    then the late result is kept on the row for operators, and the model is not told twice.
    `call`: the ToolCall as the caller holds it (its name, thread, run and approval are not read again).
    `tell`: tool_outcome on commit; else the caller calls outcome_recorded() once it has committed."""
    if move_call(call_id, status, leaving=[ToolCall.Status.EXECUTING], result=output):
        if tell:
            outcome_recorded(call_id, status, call)
        return True
    ToolCall.objects.filter(pk=call_id, status=ToolCall.Status.OUTCOME_UNKNOWN).update(
        result=f"[finished after recovery reported it: {status}] {output}"[:20000]
    )
    log.warning("tool call %s finished (%s) after recovery declared it unknown", call_id, status)
    return False


def outcome_recorded(call_id, status, row=None):
    """tool_outcome after commit (webhooks send `tool.outcome`); never fails the call."""
    def send():
        call = {"name": row.name, "thread_id": row.thread_id, "run_id": row.run_id, "approval_id": row.approval_id} \
            if row is not None else \
            one(ToolCall.objects.filter(pk=call_id).values("name", "thread_id", "run_id", "approval_id"))
        if call:
            tool_outcome.send_robust(sender=ToolCall, approval_ref=call["approval_id"] or "", data={
                "tool_name": call["name"], "outcome": str(status), "tool_call": call_id, "thread": call["thread_id"],
                "run": call["run_id"], "approval": call["approval_id"]})
    transaction.on_commit(send)


# the Redis time (ms) recovery first found this Redis's data without it: a lease missing since less
# than a lease length may be a live holder's that a restart emptied (kept without expiry)
LEASES_SINCE_KEY = "agui:leases:since"
# the Redis time (ms) recovery last read the leases: a silence longer than SWEEP_SILENCE means Redis was
# out of reach (of the sweeps, and so of live holders' renewals too) though it kept its data (a restart
# from its snapshot or log, a network cut): holders write again only at their next renewal
LEASES_SWEPT_KEY = SWEPT_KEY


# held by the sweep running now (a token of its own), so that a second one at once (two beats, or a
# sweep slower than the beat's period) leaves it alone: each of its parts reads what is to do before it
# writes that it is done, and two at once announced a run twice (two RUN_STARTED) and published an
# end twice. It lapses after SWEEP_HOLD_MS should its worker die mid-sweep.
SWEEP_KEY = "agui:leases:sweeping"
SWEEP_HOLD_MS = 30_000
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


@contextmanager
def one_sweep_at_a_time():
    """True inside when this sweep may go on; False when another holds the turn. A Redis that cannot
    be asked lets it go on, as before (its parts that need Redis fail on their own and say so)."""
    token = uuid.uuid4().hex
    try:
        mine = bool(events.redis_client().set(SWEEP_KEY, token, nx=True, px=SWEEP_HOLD_MS))
    except redis.RedisError:
        yield True
        return
    if not mine:
        log.info("recovery sweep skipped: another one is running (two beats, or a slow sweep)")
        yield False
        return
    try:
        yield True
    finally:
        try:
            events.redis_client().eval(_RELEASE, 1, SWEEP_KEY, token)
        except redis.RedisError:
            pass  # it lapses on its own


def sweep_silence_ms():
    """The shortest outage that can make a live holder's lease lapse (two missed renewals: two thirds
    of a lease), but at least two beat periods: a sweep late in a busy queue only delays recovery."""
    every = float(settings.CELERY_BEAT_SCHEDULE.get("recover-stuck-tool-calls", {}).get("schedule", 10.0))
    return max(2 * every, 2 * RENEW_EVERY * float(settings.AGUI_TOOL_LEASE_SECONDS)) * 1000


def run_lease_key(run_id):
    return f"agui:run:{run_id}:lease"


def lease(call_id):
    """While a tool runs: a lapsed lease on an `executing` call means its worker died."""
    return hold(lease_key(call_id), f"tool call {call_id}")


def run_lease(run_id):
    """While a run is `running` in a worker: a lapsed lease means the worker died mid-stream."""
    return hold(run_lease_key(run_id), f"run {run_id}")


# --- recovery ----------------------------------------------------------------------------------


def unknown_text(name):
    return (
        f"Error: the outcome of {name} is unknown. The worker running it stopped before it reported back, "
        "so it may or may not have taken effect. It was not run again, because running it twice could repeat "
        "its effect. Do not call it again on your own: tell the user, and ask them to check whether it happened."
    )


def lost_text(name, detail):
    return (
        f"Error: the outcome of {name} is unknown: {detail}, so it may or may not have taken effect. It was not "
        "run again, because running it twice could repeat its effect. Do not call it again on your own: tell "
        "the user, and ask them to check whether it happened."
    )


def report_unknown(call_id, run, detail):
    """A call that went out and got no answer (a remote tool's server died or timed out): executing ->
    outcome_unknown at once, its tool message, an audit row and the operators told, as recovery does;
    never repeated. Returns the tool message, or None when the call was no longer executing."""
    with transaction.atomic():
        call = ToolCall.objects.select_for_update().get(pk=call_id)
        text = lost_text(call.name, detail)
        if not move_call(call.pk, ToolCall.Status.OUTCOME_UNKNOWN, leaving=[ToolCall.Status.EXECUTING], result=text,
                         updated_at=timezone.now()):
            return None
        msg = add_message(run.thread, Message.Role.TOOL, text, run=run, tool_call_id=call.pk)
        request = one(ApprovalRequest.objects.filter(pk=call.approval_id)) if call.approval_id else None
        approval_services.record(AuditEvent.Action.OUTCOME_UNKNOWN, object_ref=f"toolcall:{call.pk}",
                                 tool_name=call.name, request=request,
                                 before={"status": "executing", "tool_call": call.pk, "run": run.pk,
                                         "thread": run.thread_id},
                                 after={"status": "outcome_unknown", "repeated": False, "detail": detail[:500]})
        transaction.on_commit(lambda: _tell_operators(call, run, msg))
        outcome_recorded(call.pk, "unknown")
    log.warning("tool call %s (%s): outcome unknown: %s", call_id, call.name, detail)
    return msg


def stuck_call_ids(limit=100):
    """Executing calls whose lease lapsed. Nothing when Redis cannot be asked: better late than wrong."""
    cutoff = timezone.now() - timedelta(seconds=float(settings.AGUI_TOOL_LEASE_SECONDS))
    candidates = list(ToolCall.objects.filter(status=ToolCall.Status.EXECUTING, claimed_at__lt=cutoff)
                      .values_list("pk", flat=True)[:limit])
    if not candidates:
        _lapsed([])  # the sweep is noted all the same: a long silence before the next one is an outage
        return []
    lapsed = _lapsed([lease_key(call_id) for call_id in candidates])
    return [call_id for call_id, gone in zip(candidates, lapsed or [], strict=False) if gone]


def recover_stuck_calls():
    """Beat task body: returns {call id: "outcome_unknown" | "retry"} for what it changed."""
    out = {}
    for call_id in stuck_call_ids():
        outcome = recover_call(call_id)
        if outcome:
            out[call_id] = outcome
    return out


def recover_call(call_id):
    with transaction.atomic():
        # lock order as in services.approval_resolved: the run, then the call
        run_id = one(ToolCall.objects.filter(pk=call_id).values_list("run_id", flat=True))
        if run_id is None:
            return None
        run = _executing_run(run_id)
        call = ToolCall.objects.select_for_update().get(pk=call_id)
        if call.status != ToolCall.Status.EXECUTING:
            return None
        agent = get_agent(run.thread.agent)
        tool = agent.tool(call.name) if agent else None
        request = one(ApprovalRequest.objects.filter(pk=call.approval_id)) if call.approval_id else None
        facts = {"tool_call": call.pk, "thread": run.thread_id, "run": run.pk, "attempts": call.attempts}
        run_was_live = run.status == Run.Status.RUNNING  # else it was stopped or ended: no continuation
        recorded = _recorded_outcome(tool, call)
        said = None
        audit = functools.partial(approval_services.record, object_ref=f"toolcall:{call.pk}", tool_name=call.name,
                                  request=request, before={"status": "executing", **facts})
        if recorded not in (None, NOT_DONE):  # it took effect: its records say so, and what it did
            outcome = "succeeded"
            _settle_from_records(run, call, ToolCall.Status.SUCCEEDED, recorded)
            audit(AuditEvent.Action.OUTCOME_REPORTED, after={"status": "succeeded", "read_from": "the tool's records"})
        elif (run_was_live and tool is not None and (tool.idempotent or recorded == NOT_DONE)
                and call.attempts < settings.AGUI_TOOL_MAX_ATTEMPTS):
            outcome, said = "retry", "retry" if tool.idempotent else "rerun"
            # claimable again: the continuation's settle runs it
            move_call(call.pk, ToolCall.Status.APPROVED, leaving=[ToolCall.Status.EXECUTING],
                      updated_at=timezone.now())
            audit(AuditEvent.Action.RETRIED, after={"status": "approved", "reason": "idempotent tool: run again"
                                                    if tool.idempotent else "its records show no effect: run again"})
        elif recorded == NOT_DONE:  # no continuation to run it, or out of attempts: not executed, and said so
            outcome = "failed"
            _settle_from_records(run, call, ToolCall.Status.FAILED, not_done_text(call.name))
            audit(AuditEvent.Action.OUTCOME_REPORTED, after={"status": "failed", "read_from": "the tool's records"})
        else:
            outcome = "outcome_unknown"
            text = unknown_text(call.name)
            move_call(call.pk, ToolCall.Status.OUTCOME_UNKNOWN, leaving=[ToolCall.Status.EXECUTING], result=text,
                      updated_at=timezone.now())
            msg = add_message(run.thread, Message.Role.TOOL, text, run=run, tool_call_id=call.pk)
            audit(AuditEvent.Action.OUTCOME_UNKNOWN, after={"status": "outcome_unknown", "repeated": False})
            transaction.on_commit(lambda: _tell_operators(call, run, msg))
            outcome_recorded(call.pk, "unknown")
        if run_was_live:
            # for the chat's owner (RUN_ERROR, the run's error), in their language: recovery runs in
            # the beat, which has no request to take a language from
            with translation.override(selectors.run_language(run.pk)):
                message = LOST_MESSAGES[said or outcome]() % {"tool": call.name}
            # its continuation settles a retried call, then the model answers the person
            _declare_lost(run, message)
    log.warning("tool call %s (%s) recovered: %s", call_id, call.name, outcome)
    return outcome


# what the chat's owner reads of a run whose worker died mid-call, by what recovery made of the call
LOST_MESSAGES = {
    "succeeded": lambda: _("The worker stopped while %(tool)s was running; it had taken effect, as its records "
                           "show, and it was not repeated."),
    "retry": lambda: _("The worker stopped while %(tool)s was running; it will be run again (the tool is "
                       "idempotent)."),
    "rerun": lambda: _("The worker stopped while %(tool)s was running; it had not taken effect, as its records "
                       "show, and it will be run again."),
    "failed": lambda: _("The worker stopped while %(tool)s was running; it had not taken effect and was not run "
                        "again."),
    "outcome_unknown": lambda: _("The worker stopped while %(tool)s was running; its outcome is unknown and it was "
                                 "not repeated."),
}


def not_done_text(name):
    return (f"Error: {name} was not executed: the worker running it stopped before it took effect, as the tool's "
            "records show. Tell the user; run it again only if they ask.")


def _recorded_outcome(tool, call):
    """What the tool's own records say of the call (tools.tool's `outcome`): its result, NOT_DONE,
    or None when it keeps none or cannot tell."""
    read = getattr(tool, "outcome", None)  # an MCP server's tools keep no records of ours
    if read is None:
        return None
    try:
        with transaction.atomic():  # a failing read must not abort recovery's transaction
            return read(call.pk, call.final_arguments if call.final_arguments is not None else call.arguments)
    except Exception:
        log.exception("tool %s could not say how call %s went; its outcome is unknown", call.name, call.pk)
        return None


RUN_AGAIN = "run_again"


def read_after_lost_connection(tool, call):
    """A call whose database connection broke while its tool ran (a COMMIT whose answer never came:
    the money may have moved, or not): the broken connection is closed and the tool's records read
    on another. (status, output) when they tell; None when the tool keeps none or they cannot be
    read, and its outcome is unknown. It was reported `failed`, the money having moved, and the person
    asked again. RUN_AGAIN when they show it did not take effect and it has had fewer than
    AGUI_TOOL_MAX_ATTEMPTS executions: claimable again (executing -> approved), for the caller to run
    it on the new connection, as recovery runs one whose worker died there. Failed for good, an
    approved transfer was lost to a database failover and had to be asked and approved again."""
    connection.close()
    recorded = _recorded_outcome(tool, call)
    if recorded is None:
        return None
    if recorded == NOT_DONE:
        attempts = one(ToolCall.objects.filter(pk=call.pk).values_list("attempts", flat=True)) or 0
        if attempts < settings.AGUI_TOOL_MAX_ATTEMPTS and move_call(
                call.pk, ToolCall.Status.APPROVED, leaving=[ToolCall.Status.EXECUTING], updated_at=timezone.now()):
            log.warning("tool call %s (%s): its records show no effect; run again (attempt %s)",
                        call.pk, call.name, attempts + 1)
            return RUN_AGAIN
        return ToolCall.Status.FAILED, (f"Error: {call.name} was not executed: its database connection broke before "
                                        "it took effect, as the tool's records show.")
    return ToolCall.Status.SUCCEEDED, recorded


def _settle_from_records(run, call, status, result):
    """executing -> `status` with `result` read from the tool's records, told to the model."""
    move_call(call.pk, status, leaving=[ToolCall.Status.EXECUTING], result=result, updated_at=timezone.now())
    add_message(run.thread, Message.Role.TOOL, result, run=run, tool_call_id=call.pk)
    outcome_recorded(call.pk, status, call)


def _executing_run(run_id):
    """The run that executes a call of run `run_id`, locked: that run, or, once it paused, its one
    continuation, which settles (executes) its approved calls (runner.settle) while the call's row
    still names the paused run."""
    run = Run.objects.select_for_update().select_related("thread").get(pk=run_id)
    if run.status == Run.Status.RUNNING:
        return run
    continuation = one(Run.objects.select_for_update().select_related("thread").filter(parent_run_id=run_id))
    return continuation if continuation is not None and continuation.status == Run.Status.RUNNING else run


def _declare_lost(run, message):
    """running -> failed (worker_lost), RUN_ERROR on commit, and the run's one continuation.
    The caller holds the run's row lock and has seen it running."""
    move_run(run.pk, Run.Status.FAILED, leaving=[Run.Status.RUNNING], finished_at=timezone.now(),
             error=message, error_code="worker_lost")
    transaction.on_commit(lambda: agent_services.publish_end(run.pk, run.thread_id,
                                                             RunErrorEvent(message=message, code="worker_lost")))
    transaction.on_commit(lambda: agent_services.stop_lost_worker(run.pk))
    # requests the dead worker filed before it could pause the run: no run would carry out a decision
    # on them (this one failed, its continuation answers from the history), so they are withdrawn
    # now, each call's fate with them, and the model hears the call was not run
    for request_id in ApprovalRequest.objects.filter(run_ref=run.pk, status=ApprovalRequest.Status.PENDING) \
            .values_list("pk", flat=True):
        approval_services.cancel(request_id, reason="the worker stopped before the run paused, so it was not asked "
                                                    "any further", resolve_here=agent_services.approval_resolved)
    start_continuation(run)


def _tell_operators(call, run, msg):
    arguments = call.final_arguments if call.final_arguments is not None else call.arguments

    def compose():  # run once per staff member, in their language (approvals.mail._send)
        values = {"tool": call.name, "call": call.pk, "thread": run.thread_id, "run": run.pk}
        subject = _("Outcome unknown: %(tool)s (tool call %(call)s)") % values
        body = (_("A worker stopped while it was executing %(tool)s in thread %(thread)s (run %(run)s).") % values
                + "\n" + _("Arguments: %(arguments)s") % {"arguments": arguments} + "\n\n"
                + _("The call was not repeated. Check whether it took effect; the model was told the outcome "
                    "is unknown.") + "\n")
        return subject, body

    approval_mail.operator_alert(compose)
    approval_notify.operator_notice("toolcall.outcome_unknown", {
        "tool_call": {"id": call.pk, "name": call.name, "thread": run.thread_id, "run": run.pk, "message": msg.pk},
    })


def _lapsed(keys):
    """Which of these leases are gone; None (recover nothing) when Redis cannot be asked, or when
    its data is younger than a lease: a restart or failover that emptied it dropped every live
    holder's key too, written again only at its next renewal (a third of a lease later). After a
    silence of the sweeps (Redis out of reach, its data kept) the data counts as new again: live
    holders could not renew either, and their keys lapsed meanwhile."""
    try:
        client = events.redis_client()
        pipe = client.pipeline(transaction=False)
        pipe.time()
        pipe.get(LEASES_SINCE_KEY)
        pipe.get(LEASES_SWEPT_KEY)
        for key in keys:
            pipe.exists(key)
        (seconds, micros), since, swept, *held = pipe.execute()
        now_ms = seconds * 1000 + micros // 1000
        silent = swept is not None and now_ms - int(swept) > sweep_silence_ms()
        pipe = client.pipeline(transaction=False)
        pipe.set(LEASES_SWEPT_KEY, now_ms)
        if since is None or silent:  # new to recovery, or unreachable a while: watched from now on
            pipe.set(LEASES_SINCE_KEY, now_ms, nx=not silent)
            since = since if since is not None and not silent else now_ms
        pipe.execute()
        if now_ms - int(since) < float(settings.AGUI_TOOL_LEASE_SECONDS) * 1000:
            if keys:  # a sweep with nothing to judge (one only noted) waits without a word: every start did
                log.warning("recovery waits: Redis's data is younger than a lease (restarted?); live workers' "
                            "leases may not be written again yet")
            return None
        return [not alive for alive in held]
    except redis.RedisError as exc:
        log.warning("recovery skipped: leases unreadable (%s)", exc)
        return None


def recover_stuck_runs(limit=100):
    """Beat: runs left `running` by a dead worker outside any tool (the model was streaming).

    They end with RUN_ERROR worker_lost and one continuation answers from the stored history
    (what the dead worker had streamed but not stored is said again, not lost half-way).
    Runs with a stuck tool call are recover_call's: it decides whether that call is repeated (a
    continuation's calls are its paused parent's rows: _executing_run).
    """
    cutoff = timezone.now() - timedelta(seconds=float(settings.AGUI_TOOL_LEASE_SECONDS))
    candidates = list(
        Run.objects.filter(status=Run.Status.RUNNING, started_at__lt=cutoff)
        .exclude(tool_calls__status=ToolCall.Status.EXECUTING)
        .exclude(parent_run__tool_calls__status=ToolCall.Status.EXECUTING).values_list("pk", flat=True)[:limit]
    )
    lapsed = _lapsed([run_lease_key(r) for r in candidates]) if candidates else []
    recovered = []
    for run_id, gone in zip(candidates, lapsed or [], strict=False):
        if not gone:
            continue
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_id)
            if run.status != Run.Status.RUNNING or ToolCall.objects.filter(
                    run_id__in=[run.pk, run.parent_run_id], status=ToolCall.Status.EXECUTING).exists():
                continue
            with translation.override(selectors.run_language(run.pk)):  # for the chat's owner, as recover_call
                message = _("The worker running this answer stopped; the agent answers again from the saved "
                            "conversation.")
            _declare_lost(run, message)
            recovered.append(run_id)
        log.warning("run %s recovered after its worker died", run_id)
    return recovered


def requeue_lost_runs(limit=100):
    """Beat: queued runs that never reached a worker are sent again.

    A run with a stream id was announced but its task message was lost (a broker restart); one
    without was committed by a process that died before its on-commit announce (RUN_STARTED and
    the task) ran: it is announced now. Safe when either was only slow: the worker's conditional
    claim runs a run once.
    """
    cutoff = timezone.now() - timedelta(seconds=float(settings.AGUI_RUN_REQUEUE_SECONDS))
    lost = list(Run.objects.filter(status=Run.Status.QUEUED, created_at__lt=cutoff)
                .values_list("pk", "stream_id")[:limit])
    for run_id, stream_id in lost:
        if stream_id:
            dispatch.enqueue_run(run_id)
        else:
            dispatch.announce(run_id)
    if lost:  # the operator's one clue that a broker lost tasks (an emptied Redis): /healthz was ok all along
        log.warning("sent again %d run(s) still queued after %s s, their task lost (a broker restart?): %s",
                    len(lost), settings.AGUI_RUN_REQUEUE_SECONDS, ", ".join(r for r, _ in lost[:10]))
    return [run_id for run_id, _ in lost]


def publish_undelivered_ends(limit=100):
    """Beat: the RUN_FINISHED / RUN_ERROR of runs that ended while Redis was unreachable.

    Readers wait after the last entry they saw; a restarted Redis numbers new entries from the
    clock, so they hear the end even when the stream itself was lost. Returns the run ids.
    """
    published = []
    for run_id, thread_id, payload in (Run.objects.exclude(undelivered_end="").order_by("finished_at")
                                       .values_list("pk", "thread_id", "undelivered_end")[:limit]):
        events.append_encoded(thread_id, payload)
        Run.objects.filter(pk=run_id, undelivered_end=payload).update(undelivered_end="")
        published.append(run_id)
    if published:
        log.warning("published the end of %d run(s) that ended while Redis was unreachable", len(published))
    return published
