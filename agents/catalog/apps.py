from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CatalogConfig(AppConfig):
    name = "agents.catalog"
    label = "catalog"
    verbose_name = _("Demo catalogue")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"
