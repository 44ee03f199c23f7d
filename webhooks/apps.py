from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = _("Webhooks")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from agui_project.destinations import where_it_goes
        from approvals import account_audit

        from . import receivers  # noqa: F401  (connects the signal receivers)
        from .models import WebhookEndpoint

        # every endpoint added, changed or deleted is in the audit trail: it hears every request's arguments
        account_audit.watch_connection(
            WebhookEndpoint, kind="webhook", ref=lambda e: f"webhook:{e.pk}",
            fields=("url", "events", "description", "is_active"),
            shown=lambda e: {"url": where_it_goes(e.url), "events": list(e.events or []),
                             "description": e.description, "is_active": e.is_active},
            named_by="url")
