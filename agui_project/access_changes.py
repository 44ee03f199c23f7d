"""What follows a change of a user's access. A socket authenticates once, when it opens: an account
switched off, deleted or given a new password kept its open chat (which still took state patches)
and inbox sockets, and a reviewer taken out of a group kept hearing that group's requests. Such a
change closes the user's sockets (CLOSE_RECHECK, after commit); the pages reconnect at once and the
handshake decides anew: signed out is 4401, the inbox joins the groups the user has now.

A new password also revokes the account's API token, as Django ends the account's other sessions:
a token taken by whoever made the owner change their password kept working."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import receiver
from rest_framework.authtoken.models import Token

from .sockets import user_group

log = logging.getLogger(__name__)
# what a socket's handshake judges: the session's hash is the password's, staff see every request
WATCHED = ("is_active", "password", "is_staff", "is_superuser")


def changed(instance):
    """Which of WATCHED the save of this user under way changes (read by post_save receivers elsewhere:
    agents/receivers.py ends the work of an account switched off)."""
    return getattr(instance, "_agui_access_changed", set())


def recheck_sockets(user_ids):
    """Close the sockets of these users once the current transaction commits."""
    ids = sorted({pk for pk in user_ids if pk is not None})
    if ids:
        transaction.on_commit(lambda: _close(ids))


def _close(user_ids):
    try:
        layer = get_channel_layer()
        for pk in user_ids:
            async_to_sync(layer.group_send)(user_group(pk), {"type": "access.changed"})
    except Exception as exc:  # the change itself stands; the sockets then live until they close
        log.warning("access of users %s changed: could not tell their open sockets: %r", user_ids, exc)


@receiver(pre_save, sender=settings.AUTH_USER_MODEL)
def _note_access(sender, instance, raw=False, update_fields=None, **kwargs):
    instance._agui_access_changed = set()
    if raw or instance.pk is None or (update_fields is not None and not set(update_fields) & set(WATCHED)):
        return  # a sign-in saves last_login alone: no read for it
    stored = sender.objects.filter(pk=instance.pk).values(*WATCHED).first() or {}
    instance._agui_access_changed = {f for f in stored if stored[f] != getattr(instance, f)}


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def _saved(sender, instance, **kwargs):
    changes = changed(instance)
    # a sign-in that upgrades the hash (a new hasher or iteration count) keeps the password: Django
    # marks it so (_password None, as for its password_changed); the token stays
    if "password" in changes and instance._password is not None:
        Token.objects.filter(user=instance).delete()
    if changes:
        recheck_sockets([instance.pk])


@receiver(post_delete, sender=settings.AUTH_USER_MODEL)
def _deleted(sender, instance, **kwargs):
    recheck_sockets([instance.pk])


@receiver(m2m_changed, sender="auth.User_groups")
def _groups_changed(sender, instance, action, reverse, pk_set, **kwargs):
    """user.groups.add/remove/clear, and a group's user_set (reverse: `instance` is the group)."""
    if action == "pre_clear" and reverse:  # who the group had: a clear names nobody afterwards
        instance._agui_members = list(instance.user_set.values_list("pk", flat=True))
    elif action in ("post_add", "post_remove", "post_clear"):
        if not reverse:
            recheck_sockets([instance.pk])
        else:
            recheck_sockets(getattr(instance, "_agui_members", []) if action == "post_clear" else pk_set or [])
