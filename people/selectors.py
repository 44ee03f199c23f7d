"""Reads of people's profiles (pages and mails)."""

from django.conf import settings
from django.contrib.auth import get_user_model

from . import zones
from .models import Profile


def language_of(user):
    """The language `user` chose, or "" (then the browser's or LANGUAGE_CODE applies)."""
    if user is None or not getattr(user, "pk", None):
        return ""
    if user.__class__.profile.is_cached(user):  # read with the user (the token lookup joins it)
        try:
            return user.profile.language or ""
        except Profile.DoesNotExist:
            return ""
    return Profile.objects.filter(user_id=user.pk).values_list("language", flat=True).first() or ""


def written_in(language, browser_language):
    """The language written for a person away from their pages (a chat's cards and outcomes, made in a
    worker or a socket; their mails): the one they chose, else the one their pages were last shown in
    (their browser's preference), else LANGUAGE_CODE."""
    return language or browser_language or settings.LANGUAGE_CODE


def language_for(user):
    """written_in for `user`, read with the user when their profile was (select_related), else one read."""
    if user is None or not getattr(user, "pk", None):
        return settings.LANGUAGE_CODE
    if user.__class__.profile.is_cached(user):
        try:
            return written_in(user.profile.language, user.profile.browser_language)
        except Profile.DoesNotExist:
            return settings.LANGUAGE_CODE
    row = Profile.objects.filter(user_id=user.pk).values_list("language", "browser_language").first()
    return written_in(*(row or ("", "")))


def chosen_time_zone(user):
    """The time zone `user` chose, or "" (then their browser's, then UTC)."""
    if user is None or not getattr(user, "pk", None):
        return ""
    return zones.valid(Profile.objects.filter(user_id=user.pk).values_list("time_zone", flat=True).first())


def inbox_keys_on(user):
    """Whether the inbox pages' single-key shortcuts act for `user` (on unless they switched them off)."""
    if user is None or not getattr(user, "pk", None):
        return True
    return Profile.objects.filter(user_id=user.pk).values_list("inbox_keys", flat=True).first() is not False


_READER = ("language", "time_zone", "browser_time_zone", "browser_language")


def _reader(language, chosen, seen, seen_language):
    """(language, zone) of a person's mail: the language they chose, else the one their pages were last
    shown in, else LANGUAGE_CODE; the zone they chose, else the one their browser last reported, else "" (UTC)."""
    return written_in(language, seen_language), zones.valid(chosen) or zones.valid(seen)


def reader_of(user):
    """(language, time zone) of `user`'s mails, in one read of their profile."""
    row = Profile.objects.filter(user_id=user.pk).values_list(*_READER).first() if getattr(user, "pk", None) else None
    return _reader(*(row or ("", "", "", "")))


def readers_by_email(emails):
    """{email: (language, time zone)} as reader_of has them, for the active accounts with these addresses;
    an address without an account (settings.ADMINS) gets LANGUAGE_CODE and "" (UTC), so each mail has
    one language and one clock."""
    rows = get_user_model().objects.filter(email__in=list(emails), is_active=True, profile__isnull=False) \
        .values_list("email", *(f"profile__{field}" for field in _READER))
    found = {email: row for email, *row in rows}
    return {email: _reader(*found.get(email, ("", "", "", ""))) for email in emails}
