"""Thin Celery tasks; safe to run twice (services.deliver claims the delivery first)."""

from celery import shared_task

from . import services


@shared_task(name=services.DELIVER_TASK, ignore_result=True)
def deliver(delivery_id):
    services.deliver(delivery_id)


@shared_task(ignore_result=True)
def deliveries_due():
    """Beat: deliveries whose countdown task was lost (a broker restart, a worker killed) are queued
    again, each its own task (a slow receiver holds up no other)."""
    for delivery_id in services.due_delivery_ids():
        services.enqueue(delivery_id)
