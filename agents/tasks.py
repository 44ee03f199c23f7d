"""Thin Celery tasks: ids in, runner/services do the work; safe to run twice."""

from celery import shared_task

from . import account_off, services
from .runtime import execution, runner


@shared_task(ignore_result=True, acks_late=True)
def run_agent(run_id):
    runner.run_agent(run_id)  # in the chat owner's language


@shared_task(ignore_result=True, acks_late=True)
def continue_decided(request_id):
    """A decision's wake-up, off the decider's request; its continuation runs here, in this task,
    not after one more trip through the broker. Run twice, the second finds the call settled."""
    for run in services.continue_decided(request_id):
        runner.run_agent(run.pk, made=run)


@shared_task(ignore_result=True)
def stop_abandoned_run(run_id):
    """Counted down from the moment a run's client went away (agents/watching.py)."""
    services.stop_abandoned_run(run_id)


@shared_task(ignore_result=True)
def resume_stalled():
    services.resume_stalled()


@shared_task(ignore_result=True)
def recover_stuck_calls():
    """Beat: tool calls and runs a dead worker left, lost run messages, ends Redis could not take.
    One at a time: a second sweep at once (two beats, a slow sweep) leaves it to the first."""
    with execution.one_sweep_at_a_time() as mine:
        if not mine:
            return
        execution.recover_stuck_calls()
        execution.recover_stuck_runs()  # after the calls: a run with a stuck call is recover_call's
        services.announce_unannounced()  # soon after Redis is back, before requeue_lost_runs' longer wait
        execution.requeue_lost_runs()
        execution.publish_undelivered_ends()
        services.pass_on_stops()


@shared_task(ignore_result=True)
def withdraw_switched_off():
    """Beat: the requests and runs of accounts switched off without a save (agents/account_off.py)."""
    account_off.sweep()
