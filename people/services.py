"""Changes to a person's profile."""

from django.conf import settings

from .models import Profile


def set_language(*, user, language):
    """Remember `language` (one of settings.LANGUAGES, or "" for the browser's) for `user`."""
    if language and language not in dict(settings.LANGUAGES):
        raise ValueError(f"unknown language {language!r}")
    Profile.objects.update_or_create(user=user, defaults={"language": language})
