from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Profile(models.Model):
    """A person's choices that outlive a session: the language of their pages and mails.
    No row, or an empty language: the browser's preference, then LANGUAGE_CODE."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile",
                                verbose_name=_("user"))
    # no choices here: adding a language to settings.LANGUAGES then needs no migration
    language = models.CharField(_("language"), max_length=16, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("profile")
        verbose_name_plural = _("profiles")

    def __str__(self):
        return f"{self.user}: {self.language or '-'}"
