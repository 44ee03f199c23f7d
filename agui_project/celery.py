import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")

app = Celery("agui_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
