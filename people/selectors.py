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


def chosen_time_zone(user):
    """The time zone `user` chose, or "" (then their browser's, then UTC)."""
    if user is None or not getattr(user, "pk", None):
        return ""
    return zones.valid(Profile.objects.filter(user_id=user.pk).values_list("time_zone", flat=True).first())


def time_zone_of(user):
    """The zone of `user`'s mails: the one they chose, else the one their browser last reported, else ""
    (UTC)."""
    if user is None or not getattr(user, "pk", None):
        return ""
    row = Profile.objects.filter(user_id=user.pk).values_list("time_zone", "browser_time_zone").first()
    return (zones.valid(row[0]) or zones.valid(row[1])) if row else ""


def readers_by_email(emails):
    """{email: (language, time zone)} of the active accounts with these addresses, for their mail (the
    zone as time_zone_of has it); an address without an account (settings.ADMINS) or a choice gets
    LANGUAGE_CODE and "" (UTC), so each mail has one language and one clock."""
    rows = get_user_model().objects.filter(email__in=list(emails), is_active=True, profile__isnull=False) \
        .values_list("email", "profile__language", "profile__time_zone", "profile__browser_time_zone")
    found = {email: (language, zones.valid(chosen) or zones.valid(seen)) for email, language, chosen, seen in rows}
    readers = {}
    for email in emails:
        language, zone = found.get(email, ("", ""))
        readers[email] = (language or settings.LANGUAGE_CODE, zone)
    return readers
