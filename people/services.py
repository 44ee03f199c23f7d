"""Changes to a person's profile."""

from django.conf import settings

from . import zones
from .models import Profile


def set_language(*, user, language):
    """Remember `language` (one of settings.LANGUAGES, or "" for the browser's) for `user`."""
    if language and language not in dict(settings.LANGUAGES):
        raise ValueError(f"unknown language {language!r}")
    Profile.objects.update_or_create(user=user, defaults={"language": language})


def set_time_zone(*, user, time_zone):
    """Remember `time_zone` (an IANA name zoneinfo knows, or "" for the browser's) for `user`."""
    if time_zone and not zones.valid(time_zone):
        raise ValueError(f"unknown time zone {time_zone!r}")
    Profile.objects.update_or_create(user=user, defaults={"time_zone": time_zone})


def note_browser_time_zone(*, user, time_zone):
    """The zone `user`'s browser reported (valid: the middleware checked it): their mails' zone while
    they choose none."""
    Profile.objects.update_or_create(user=user, defaults={"browser_time_zone": time_zone})


def set_inbox_keys(*, user, on):
    """Switch the inbox pages' single-key shortcuts (j, k, a, r...) on or off for `user`."""
    Profile.objects.update_or_create(user=user, defaults={"inbox_keys": bool(on)})
