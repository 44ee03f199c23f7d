from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Profile(models.Model):
    """A person's choices that outlive a session: the language and time zone of their pages and mails.
    No row, or an empty language: the browser's preference (for what is written away from their pages,
    a chat's cards and their mails: the one their pages were last shown in), then LANGUAGE_CODE. An empty time zone:
    the browser's (people.middleware; for mail, the one it last reported), then UTC. No row: the inbox's
    single-key shortcuts on."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile",
                                verbose_name=_("user"))
    # no choices here: adding a language to settings.LANGUAGES then needs no migration
    language = models.CharField(_("language"), max_length=16, blank=True)
    # IANA names checked against zoneinfo by the services, not choices: tzdata adds and renames zones
    time_zone = models.CharField(_("time zone"), max_length=64, blank=True, default="", db_default="")
    browser_time_zone = models.CharField(_("browser's time zone"), max_length=64, blank=True, default="", db_default="",
                                         help_text=_("The zone their browser last reported: their mails use it "
                                                     "while they have chosen none."))
    browser_language = models.CharField(_("browser's language"), max_length=16, blank=True, default="",
                                        db_default="",
                                        help_text=_("The language their pages were last shown in, from their "
                                                    "browser: their chats and mails use it while they have "
                                                    "chosen none."))
    # j, k, a, r... on the inbox pages (WCAG 2.1.4): a speech-input user's stray word, or letters typed
    # after the focus fell to the page, must not approve a request
    inbox_keys = models.BooleanField(_("single-key shortcuts in the inbox"), default=True, db_default=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("profile")
        verbose_name_plural = _("profiles")

    def __str__(self):
        return f"{self.user}: {self.language or '-'}, {self.time_zone or '-'}"
