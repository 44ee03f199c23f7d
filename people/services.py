"""Changes to a person's profile."""

from django.conf import settings

from . import zones
from .models import Profile


def _known_language(language):
    if language and language not in dict(settings.LANGUAGES):
        raise ValueError(f"unknown language {language!r}")


def _known_zone(time_zone):
    if time_zone and not zones.valid(time_zone):
        raise ValueError(f"unknown time zone {time_zone!r}")


def set_language(*, user, language):
    """Remember `language` (one of settings.LANGUAGES, or "" for the browser's) for `user`."""
    _known_language(language)
    Profile.objects.update_or_create(user=user, defaults={"language": language})


def set_time_zone(*, user, time_zone):
    """Remember `time_zone` (an IANA name zoneinfo knows, or "" for the browser's) for `user`."""
    _known_zone(time_zone)
    Profile.objects.update_or_create(user=user, defaults={"time_zone": time_zone})


def save_settings(*, user, language, time_zone, inbox_keys):
    """The settings page's choices in one write: the language and time zone (checked as set_language and
    set_time_zone check them) and whether the inbox's single-key shortcuts act."""
    _known_language(language)
    _known_zone(time_zone)
    Profile.objects.update_or_create(user=user, defaults={"language": language, "time_zone": time_zone,
                                                          "inbox_keys": bool(inbox_keys)})


def note_browser_language(*, user, language):
    """The language `user`'s pages were shown in from their browser's preference (LocaleMiddleware's
    choice): what a worker, a socket or a mail writes for them in while they choose none."""
    Profile.objects.update_or_create(user=user, defaults={"browser_language": language})


def note_browser_time_zone(*, user, time_zone):
    """The zone `user`'s browser reported (valid: the middleware checked it): their mails' zone while
    they choose none."""
    Profile.objects.update_or_create(user=user, defaults={"browser_time_zone": time_zone})

