import logging

from django.db.models.signals import post_delete
from django.dispatch import receiver

from approvals.signals import approval_event, approval_resolved

from . import services, thread_ids
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
