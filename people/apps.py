from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PeopleConfig(AppConfig):
    name = "people"
    verbose_name = _("People")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from agui_project import language

        from . import selectors  # models are loaded by now

        language.set_saved_language(selectors.language_of)  # a token caller's saved language (API answers)
