"""Deadlines without a waiting worker: countdown tasks for near moments, a beat sweep for all.
Tasks take ids and are safe to run twice (services check and stamp under a row lock)."""

from celery import shared_task

from . import selectors, services


@shared_task(name=services.DEADLINE_TASK, ignore_result=True)  # services enqueue it by this name
def deadline_due(request_id):
    """A countdown task at a request's remind / escalate / expire moment."""
    services.process_deadlines(request_id)


@shared_task(ignore_result=True)
def deadlines_due():
    """Beat (every few seconds, CELERY_BEAT_SCHEDULE): everything past a deadline, whatever its countdown did."""
    for request_id in selectors.due_request_ids():
        services.process_deadlines(request_id)


# the names the first slice used; kept so already queued tasks still resolve
@shared_task(ignore_result=True)
def expire_request(request_id):
    services.process_deadlines(request_id)


@shared_task(ignore_result=True)
def expire_due():
    deadlines_due()
