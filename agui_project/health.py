"""GET /healthz: 200 once the database, Redis and at least one Celery worker answer."""

from django.db import connection
from django.http import JsonResponse

from agents.events import redis_client
from agui_project.celery import app as celery_app


def healthz(request):
    body, ok = {}, True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        body["db"] = "ok"
    except Exception as exc:  # report, don't raise: this is the health probe
        body["db"], ok = f"error: {exc.__class__.__name__}", False
    try:
        redis_client().ping()
        body["redis"] = "ok"
    except Exception as exc:
        body["redis"], ok = f"error: {exc.__class__.__name__}", False
    workers = 0
    if body["redis"] == "ok":
        try:
            workers = len(celery_app.control.ping(timeout=0.5) or [])
        except Exception:
            workers = 0
    body["workers"] = workers
    ok = ok and workers > 0
    return JsonResponse(body, status=200 if ok else 503)
