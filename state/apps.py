from django.apps import AppConfig


class StateConfig(AppConfig):
    name = "state"
    default_auto_field = "django.db.models.BigAutoField"
