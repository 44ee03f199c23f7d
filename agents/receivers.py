from django.dispatch import receiver

from approvals.signals import approval_resolved

from . import services


@receiver(approval_resolved)
def on_approval_resolved(sender, request, **kwargs):
    services.approval_resolved(request)
