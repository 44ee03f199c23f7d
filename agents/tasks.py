"""Thin Celery tasks: ids in, runner/services do the work; safe to run twice."""

from celery import shared_task

from . import runner, services


@shared_task(ignore_result=True, acks_late=True)
def run_agent(run_id):
    runner.run_agent(run_id)


@shared_task(ignore_result=True)
def resume_stalled():
    services.resume_stalled()
