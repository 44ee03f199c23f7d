"""Reads of people's profiles (pages and mails)."""

from django.conf import settings
from django.contrib.auth import get_user_model

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


def languages_by_email(emails):
    """{email: language} for the active accounts with these addresses; an address without an
    account (settings.ADMINS) or a choice gets LANGUAGE_CODE, so each mail has one language."""
    found = dict(get_user_model().objects.filter(email__in=list(emails), is_active=True)
                 .exclude(profile__language="").exclude(profile__isnull=True)
                 .values_list("email", "profile__language"))
    return {email: found.get(email) or settings.LANGUAGE_CODE for email in emails}
