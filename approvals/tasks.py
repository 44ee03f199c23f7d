from celery import shared_task
from django.utils import timezone

from . import services
from .models import ApprovalRequest


@shared_task(ignore_result=True)
def expire_request(request_id):
    services.expire(request_id)


@shared_task(ignore_result=True)
def expire_due():
    """Beat safety net behind the per-request countdown tasks."""
    due = ApprovalRequest.objects.filter(
        status=ApprovalRequest.Status.PENDING, expires_at__lte=timezone.now()
    ).values_list("id", flat=True)[:500]
    for request_id in list(due):
        services.expire(request_id)
