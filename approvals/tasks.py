"""Deadlines without a waiting worker: countdown tasks for near moments, a beat sweep for all.
Tasks take ids and are safe to run twice (services check and stamp under a row lock)."""

from celery import shared_task

from . import mail, selectors, services


@shared_task(name=services.DEADLINE_TASK, ignore_result=True)  # services enqueue it by this name
def deadline_due(request_id):
    """A countdown task at a request's remind / escalate / expire moment."""
    services.process_deadlines(request_id)


@shared_task(ignore_result=True)
def deadlines_due():
    """Beat (every few seconds, CELERY_BEAT_SCHEDULE): everything past a deadline, whatever its countdown did."""
    for request_id in selectors.due_request_ids():
        services.process_deadlines(request_id)


@shared_task(name=services.HELD_TASK, ignore_result=True)
def held_due(held_id):
    """A countdown task at the end of a held decision's undo window (sent at most once)."""
    services.release(held_id)


@shared_task(ignore_result=True)
def held_decisions_due():
    """Beat: held decisions past their window whatever their countdown task did (a lost task, a
    worker restart), so a decision made in a tab closed since is still sent."""
    services.release_due()


@shared_task(name=services.MAIL_TASK, ignore_result=True)
def mail_due(due_id, *older):
    """A request's due mail, off the path of what filed it (services.mail_later). A task queued by
    the previous release names the mail itself (kind, request id, its arguments): sent as it says."""
    if older:
        mail.deliver(due_id, *older)
    else:
        services.send_due_mail(due_id)


@shared_task(ignore_result=True)
def mails_due():
    """The beat's sweep: due mails whose task was lost (a broker restarted without its queue)."""
    for due_id in services.mails_due():
        services.send_due_mail(due_id)


# the names the first slice used; kept so already queued tasks still resolve
@shared_task(ignore_result=True)
def expire_request(request_id):
    services.process_deadlines(request_id)


@shared_task(ignore_result=True)
def expire_due():
    deadlines_due()
