"""Thin Celery tasks of the MCP servers."""

from celery import shared_task

from . import services


@shared_task(ignore_result=True)
def check_servers():
    """Beat: ask servers never asked yet (seed_demo's), or unhealthy ones, for their tools again."""
    services.check_due()
