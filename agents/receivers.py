import logging

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from agui_project import access_changes
from approvals.signals import approval_event, approval_resolved

from . import account_off, services, thread_ids
from .models import Thread

log = logging.getLogger(__name__)


@receiver(approval_resolved)
def on_approval_resolved(sender, request, **kwargs):
    """Sent after the decision committed: nothing here may make it look undone (a 500 while the
    decision stands). What this could not do, the beat's resume_stalled settles."""
    try:
        services.wake_decided(request)
    except Exception:
        log.exception("the decision on %s is committed, but its run could not be continued now; "
                      "the beat continues it", request.pk)


@receiver(approval_event, dispatch_uid="agents.approval_event")
def on_approval_event(sender, kind, request, **kwargs):
    """A request a policy change routed to other deciders: its chat hears who decides now."""
    if kind == "rerouted":
        services.tell_rerouted(request)


@receiver(post_delete, sender=Thread)
def on_thread_deleted(sender, instance, **kwargs):
    """Every way a thread goes (REST, admin, its owner's deletion) keeps its id and drops its stream."""
    thread_ids.released(instance)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="agents.user_switched_off")
def on_user_saved(sender, instance, **kwargs):
    """An account switched off by any save (the admin's form or action, a script): its pending requests
    and runs end once the change is committed (account_off). What this could not do, the beat's sweep does."""
    if not instance.is_active and "is_active" in access_changes.changed(instance):
        transaction.on_commit(lambda: _withdraw(instance.pk))


def _withdraw(user_id):
    try:
        account_off.withdraw([user_id])
    except Exception:  # the switch-off stands; the admin's save is not made to look failed
        log.exception("account %s switched off: its requests and runs are left to the beat's sweep", user_id)
