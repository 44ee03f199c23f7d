from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class StateConfig(AppConfig):
    name = "state"
    verbose_name = _("Shared state")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"
