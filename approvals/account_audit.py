"""Who could decide, and who made it so: account and membership changes in the audit log.

Rules route requests to groups by name (`finance`), and a group's members decide them. So the trail
has to say who was in a group when, and who put them there: an admin who joined `finance`, approved
a transfer and left again showed nothing of it before. Recorded here, whichever way the change is
made (the Django admin's user and group forms, the *Switch the selected accounts off* action,
`seed_demo` and other commands, a script, a shell), through Django's model signals:

- an account created, deleted, renamed, given another address, switched off or on (`is_active`),
  made staff or superuser or no longer (`account_created`, `account_changed`, `account_deleted`,
  with before/after of those fields only: never a password or its hash, never `last_login`);
- a person added to or taken out of a group, from either side of the relation
  (`user.groups.add/remove/set/clear`, `group.user_set...`: `member_added`, `member_removed`,
  one row per person and group);
- a group created, renamed or deleted (`group_created`, `group_renamed`, `group_deleted`, with the
  members it had);
- a Django permission given to or taken from an account or a group, from either side of the relation
  (`permission_granted`, `permission_revoked`: saving a tool's policy asks one, and the admin site's
  permissions decide what else staff may do).

The actor is the signed-in person of the request that made the change (AskingMiddleware keeps the
request in a context variable, for sync and async requests alike); a change made with no request
(a management command, a migration, a test's setup, a Celery task) has none: "system".

What no signal announces is not seen: `queryset.update()`, raw SQL, `bulk_create` and writes to the
membership table's rows themselves (`User.groups.through.objects...`). The product makes none of
them; the beat's sweep (agents/account_off.py) still ends the work of an account switched off so.
Only staff read these rows (selectors.audit_events: others read the events of requests they see).
"""

from contextvars import ContextVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save
from django.dispatch import receiver
from django.utils import translation
from django.utils.translation import gettext as _

from agui_project.middleware import DualModeMiddleware

from .models import AuditEvent

Action = AuditEvent.Action
ACCOUNT_ACTIONS = (Action.ACCOUNT_CREATED, Action.ACCOUNT_CHANGED, Action.ACCOUNT_DELETED, Action.MEMBER_ADDED,
                   Action.MEMBER_REMOVED, Action.GROUP_CREATED, Action.GROUP_RENAMED, Action.GROUP_DELETED,
                   Action.PERMISSION_GRANTED, Action.PERMISSION_REVOKED)
# an account's fields that say who it is and what it may do; the rest (password, last_login, names) never
ACCOUNT_FIELDS = ("username", "email", "is_active", "is_staff", "is_superuser")

# --- who is asking ------------------------------------------------------------------------------

_asking = ContextVar("agui_asking_request", default=None)


class AskingMiddleware(DualModeMiddleware):
    """Keeps the request for the length of its handling, so that a change it makes is recorded with
    the person signed in (read only then: request.user is lazy, and DRF puts a token's user there).
    No I/O and not a MiddlewareMixin: last in MIDDLEWARE it is a layer of its own inside the classic
    middleware's group (agui_project/handler.py) and adds no thread hop."""

    def sync_call(self, request):
        token = _asking.set(request)
        try:
            return self.get_response(request)
        finally:
            _asking.reset(token)

    async def __acall__(self, request):
        token = _asking.set(request)
        try:
            return await self.get_response(request)
        finally:
            _asking.reset(token)


def asking_user_id():
    """The id of the person signed in to the request under way, or None (no request, or anonymous)."""
    request = _asking.get()
    user = getattr(request, "user", None) if request is not None else None
    if user is None or not user.is_authenticated:
        return None
    return user.pk


_ASKING = object()


def _record(action, object_ref, before=None, after=None, *, actor_id=_ASKING):
    actor_id = asking_user_id() if actor_id is _ASKING else actor_id
    AuditEvent.objects.create(action=action, actor_id=actor_id, object_ref=object_ref[:200], before=before,
                              after=after)


def _account(user):
    return {f: getattr(user, f) for f in ACCOUNT_FIELDS}


def _user_ref(username):
    return f"user:{username}"


# --- accounts -----------------------------------------------------------------------------------


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="account_audit_pre_save")
def _account_before(sender, instance, update_fields=None, **kwargs):
    instance._agui_audit_stored = None
    if instance.pk is None or (update_fields is not None and not set(update_fields) & set(ACCOUNT_FIELDS)):
        return  # a sign-in saves last_login alone: no read for it
    instance._agui_audit_stored = sender._base_manager.filter(pk=instance.pk).values(*ACCOUNT_FIELDS).first()


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="account_audit_post_save")
def _account_saved(sender, instance, created, **kwargs):
    stored, instance._agui_audit_stored = getattr(instance, "_agui_audit_stored", None), None
    now = _account(instance)
    if created:
        _record(Action.ACCOUNT_CREATED, _user_ref(instance.get_username()), None, now)
    elif stored:
        changed = [f for f in ACCOUNT_FIELDS if stored[f] != now[f]]
        if changed:
            _record(Action.ACCOUNT_CHANGED, _user_ref(instance.get_username()),
                    {f: stored[f] for f in changed}, {f: now[f] for f in changed})


@receiver(pre_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="account_audit_pre_delete")
def _account_deleting(sender, instance, **kwargs):
    # the membership rows go with the account, without a signal of their own: named here
    instance._agui_audit_groups = sorted(instance.groups.values_list("name", flat=True))


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="account_audit_post_delete")
def _account_deleted(sender, instance, **kwargs):
    actor_id = asking_user_id()
    before = {**_account(instance), "groups": getattr(instance, "_agui_audit_groups", [])}
    if actor_id == instance.pk:  # an account deleting itself: its id names nobody now
        actor_id, before = None, {**before, "deleted_by_itself": True}
    _record(Action.ACCOUNT_DELETED, _user_ref(instance.get_username()), before, None, actor_id=actor_id)


# --- groups -------------------------------------------------------------------------------------


@receiver(pre_save, sender=Group, dispatch_uid="account_audit_group_pre_save")
def _group_before(sender, instance, update_fields=None, **kwargs):
    instance._agui_audit_name = None
    if instance.pk is not None and (update_fields is None or "name" in update_fields):
        instance._agui_audit_name = sender._base_manager.filter(pk=instance.pk).values_list("name", flat=True).first()


@receiver(post_save, sender=Group, dispatch_uid="account_audit_group_post_save")
def _group_saved(sender, instance, created, **kwargs):
    was = getattr(instance, "_agui_audit_name", None)
    instance._agui_audit_name = None
    if created:
        _record(Action.GROUP_CREATED, f"group:{instance.name}", None, {"name": instance.name})
    elif was is not None and was != instance.name:
        _record(Action.GROUP_RENAMED, f"group:{instance.name}", {"name": was}, {"name": instance.name})


@receiver(pre_delete, sender=Group, dispatch_uid="account_audit_group_pre_delete")
def _group_deleting(sender, instance, **kwargs):
    instance._agui_audit_members = sorted(instance.user_set.values_list(get_user_model().USERNAME_FIELD, flat=True))


@receiver(post_delete, sender=Group, dispatch_uid="account_audit_group_post_delete")
def _group_deleted(sender, instance, **kwargs):
    _record(Action.GROUP_DELETED, f"group:{instance.name}",
            {"name": instance.name, "members": getattr(instance, "_agui_audit_members", [])}, None)


# --- memberships --------------------------------------------------------------------------------


def _pairs(instance, reverse, ids):
    """[(username, group name)] for the ids on the other side of `instance`, by name."""
    if not ids:
        return []
    if reverse:  # instance is a group, the ids are people's
        names = get_user_model()._base_manager.filter(pk__in=ids).values_list(get_user_model().USERNAME_FIELD,
                                                                               flat=True)
        return sorted((name, instance.name) for name in names)
    names = Group._base_manager.filter(pk__in=ids).values_list("name", flat=True)
    return sorted((instance.get_username(), name) for name in names)


def _members_now(instance, reverse, ids=None):
    """The ids on the other side of `instance` that are in the relation now (of `ids`, when given)."""
    through = get_user_model().groups.through
    mine, theirs = ("group_id", "user_id") if reverse else ("user_id", "group_id")
    rows = through._base_manager.filter(**{mine: instance.pk})
    if ids is not None:
        rows = rows.filter(**{f"{theirs}__in": ids})
    return set(rows.values_list(theirs, flat=True))


@receiver(m2m_changed, sender="auth.User_groups", dispatch_uid="account_audit_memberships")
def _memberships(sender, instance, action, reverse, pk_set, **kwargs):
    """user.groups.add/remove/set/clear (instance: the person) and group.user_set.... (reverse: the
    group). An add names only the rows it made; a remove or a clear may name rows that were not
    there, so the rows there are read first."""
    if action == "pre_remove":
        instance._agui_audit_leaving = _members_now(instance, reverse, pk_set)
    elif action == "pre_clear":
        instance._agui_audit_leaving = _members_now(instance, reverse)
    elif action == "post_add":
        for username, group in _pairs(instance, reverse, pk_set):
            _record(Action.MEMBER_ADDED, _user_ref(username), None, {"account": username, "group": group})
    elif action in ("post_remove", "post_clear"):
        leaving, instance._agui_audit_leaving = getattr(instance, "_agui_audit_leaving", set()), set()
        for username, group in _pairs(instance, reverse, leaving):
            _record(Action.MEMBER_REMOVED, _user_ref(username), {"account": username, "group": group}, None)


def _permission_changes(holders, holder_field, ref, instance, action, reverse, pk_set):
    """(user|group).permissions.add/remove/set/clear (instance: the account or group) and
    permission.(user|group)_set.... (reverse: the permission), as member changes are read above."""
    through = holders.model._meta.get_field(holder_field).remote_field.through
    mine, theirs = ("permission_id", f"{holders.model._meta.model_name}_id")
    if not reverse:
        mine, theirs = theirs, mine
    key = f"_agui_audit_revoking_{holder_field}"
    if action in ("pre_remove", "pre_clear"):
        rows = through._base_manager.filter(**{mine: instance.pk})
        if action == "pre_remove":
            rows = rows.filter(**{f"{theirs}__in": pk_set})
        setattr(instance, key, set(rows.values_list(theirs, flat=True)))
        return
    if action == "post_add":
        ids, what = pk_set or set(), Action.PERMISSION_GRANTED
    elif action in ("post_remove", "post_clear"):
        ids, what = getattr(instance, key, set()), Action.PERMISSION_REVOKED
        setattr(instance, key, set())
    else:
        return
    if not ids:
        return
    if reverse:
        pairs = [(holder, instance) for holder in holders.filter(pk__in=ids)]
    else:
        pairs = [(instance, p) for p in Permission._base_manager.filter(pk__in=ids).select_related("content_type")]
    for holder, permission in sorted(pairs, key=lambda pair: (ref(pair[0]), pair[1].codename)):
        row = {"holder": ref(holder), "permission": f"{permission.content_type.app_label}.{permission.codename}",
               "name": permission.name}
        _record(what, ref(holder), None if what == Action.PERMISSION_GRANTED else row,
                row if what == Action.PERMISSION_GRANTED else None)


@receiver(m2m_changed, sender="auth.User_user_permissions", dispatch_uid="account_audit_user_permissions")
def _account_permissions(sender, instance, action, reverse, pk_set, **kwargs):
    _permission_changes(get_user_model()._base_manager, "user_permissions", lambda u: _user_ref(u.get_username()),
                        instance, action, reverse, pk_set)


@receiver(m2m_changed, sender="auth.Group_permissions", dispatch_uid="account_audit_group_permissions")
def _group_permissions(sender, instance, action, reverse, pk_set, **kwargs):
    _permission_changes(Group._base_manager, "permissions", lambda g: f"group:{g.name}",
                        instance, action, reverse, pk_set)


# --- in words -----------------------------------------------------------------------------------


def _yes_no(field, value, user):
    return {
        ("is_active", True): _("%(user)s switched on"),
        ("is_active", False): _("%(user)s switched off"),
        ("is_staff", True): _("%(user)s made staff"),
        ("is_staff", False): _("%(user)s no longer staff"),
        ("is_superuser", True): _("%(user)s made superuser"),
        ("is_superuser", False): _("%(user)s no longer superuser"),
    }[field, bool(value)] % {"user": user}


def summary(event, language=None):
    """What an account event says, as a sentence for the audit page, its CSV and the API ("finn added
    to finance", "bob switched off"); "" for the other events (their before/after say it)."""
    if event.action not in ACCOUNT_ACTIONS:
        return ""
    if language:
        with translation.override(language):
            return summary(event)
    before = event.before if isinstance(event.before, dict) else {}
    after = event.after if isinstance(event.after, dict) else {}
    if event.action in (Action.MEMBER_ADDED, Action.MEMBER_REMOVED):
        said = _("%(user)s added to %(group)s") if event.action == Action.MEMBER_ADDED \
            else _("%(user)s taken out of %(group)s")
        row = after or before
        return said % {"user": row.get("account", "?"), "group": row.get("group", "?")}
    if event.action == Action.GROUP_CREATED:
        return _("group %(group)s created") % {"group": after.get("name", "?")}
    if event.action in (Action.PERMISSION_GRANTED, Action.PERMISSION_REVOKED):
        row = after or before
        holder, name = row.get("holder", event.object_ref), row.get("name") or row.get("permission", "?")
        granted = event.action == Action.PERMISSION_GRANTED
        if holder.startswith("group:"):
            said = _("group %(holder)s given the permission “%(permission)s”") if granted \
                else _("group %(holder)s lost the permission “%(permission)s”")
        else:
            said = _("%(holder)s given the permission “%(permission)s”") if granted \
                else _("%(holder)s lost the permission “%(permission)s”")
        return said % {"holder": holder.split(":", 1)[-1], "permission": name}
    if event.action == Action.GROUP_RENAMED:
        return _("group %(old)s renamed %(new)s") % {"old": before.get("name", "?"), "new": after.get("name", "?")}
    if event.action == Action.GROUP_DELETED:
        members = before.get("members") or []
        if not members:
            return _("group %(group)s deleted (it had no members)") % {"group": before.get("name", "?")}
        return _("group %(group)s deleted with its members %(members)s") % {
            "group": before.get("name", "?"), "members": ", ".join(members)}
    if event.action == Action.ACCOUNT_CREATED:
        roles = [word for field, word in (("is_superuser", _("superuser")), ("is_staff", _("staff"))) if after.get(field)]
        if after.get("is_active") is False:
            roles.append(_("switched off"))
        if roles:
            return _("account %(user)s created: %(roles)s") % {"user": after.get("username", "?"), "roles": ", ".join(roles)}
        return _("account %(user)s created") % {"user": after.get("username", "?")}
    if event.action == Action.ACCOUNT_DELETED:
        groups = before.get("groups") or []
        if groups:
            return _("account %(user)s deleted, and with it its place in %(groups)s") % {
                "user": before.get("username", "?"), "groups": ", ".join(groups)}
        return _("account %(user)s deleted") % {"user": before.get("username", "?")}
    # account_changed: each field that changed
    user = after.get("username") or event.object_ref.removeprefix("user:")
    parts = []
    if "username" in after:
        parts.append(_("%(old)s renamed %(new)s") % {"old": before.get("username", "?"), "new": after["username"]})
    if "email" in after:
        parts.append(_("address of %(user)s changed from %(old)s to %(new)s") % {
            "user": user, "old": before.get("email") or "—", "new": after["email"] or "—"})
    parts += [_yes_no(f, after[f], user) for f in ("is_active", "is_staff", "is_superuser") if f in after]
    return "; ".join(parts)
