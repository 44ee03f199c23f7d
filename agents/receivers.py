from django.db.models.signals import post_delete
from django.dispatch import receiver

from approvals.signals import approval_resolved

from . import services, thread_ids
from .models import Thread


@receiver(approval_resolved)
def on_approval_resolved(sender, request, **kwargs):
    services.approval_resolved(request)


@receiver(post_delete, sender=Thread)
def on_thread_deleted(sender, instance, **kwargs):
    """Every way a thread goes (REST, admin, its owner's deletion) keeps its id and drops its stream."""
    thread_ids.released(instance)
