from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _


class ApprovalsConfig(AppConfig):
    name = "approvals"
    verbose_name = _("Approvals")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        import agui_project.checks  # noqa: F401  the product's deploy checks (manage.py check --deploy)

        from . import (
            account_audit,  # noqa: F401  account and membership changes in the audit log (its receivers)
            ran,  # noqa: F401  an approved call's outcome told to its request's pages (its receiver)
            stranded,  # noqa: F401  requests a membership change left with nobody to decide (its receivers)
        )

        # the requests' mail (approvals/mail.py) goes through it: a misspelt backend failed at the
        # first mail, in a worker, with the request already made. Checked here, not in settings,
        # since a backend of the project's own may import models
        try:
            import_string(settings.EMAIL_BACKEND)
        except ImportError as exc:
            raise ImproperlyConfigured(f"DJANGO_EMAIL_BACKEND={settings.EMAIL_BACKEND!r} cannot be loaded ({exc}); "
                                       "use smtp, filebased, console, locmem or a dotted path such as "
                                       "django.core.mail.backends.smtp.EmailBackend") from None
