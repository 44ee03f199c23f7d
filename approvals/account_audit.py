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
  permissions decide what else staff may do);
- what the product is connected to (`watch_connection`): a webhook endpoint added, changed or deleted
  (it hears every request's arguments), an MCP server likewise (a stdio one is a command run on this
  host), with what it is (never a secret: an address without its query or credentials, the names of
  an MCP server's environment variables and headers, not their values).

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
from django.utils.translation import gettext_lazy

from agui_project.middleware import DualModeMiddleware

from .models import AuditEvent

Action = AuditEvent.Action
CONNECTION_ACTIONS = (Action.WEBHOOK_ADDED, Action.WEBHOOK_CHANGED, Action.WEBHOOK_DELETED, Action.MCP_SERVER_ADDED,
                      Action.MCP_SERVER_CHANGED, Action.MCP_SERVER_DELETED)
# the events that name no request (staff read them) and read as a sentence (summary)
ACCOUNT_ACTIONS = (Action.ACCOUNT_CREATED, Action.ACCOUNT_CHANGED, Action.ACCOUNT_DELETED, Action.MEMBER_ADDED,
                   Action.MEMBER_REMOVED, Action.GROUP_CREATED, Action.GROUP_RENAMED, Action.GROUP_DELETED,
                   Action.PERMISSION_GRANTED, Action.PERMISSION_REVOKED, *CONNECTION_ACTIONS)
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


# --- what the product is connected to -----------------------------------------------------------


def watch_connection(model, *, kind, ref, fields, shown, named_by):
    """Audit rows for each save and deletion of `model` (a webhook endpoint, an MCP server), whichever
    way it is made (the admin, the API, a shell): `kind` "webhook" | "mcp_server" (the actions'
    prefix), `ref(instance)` the row's object_ref, `fields` the model fields recorded, `shown(instance)`
    them as recorded ({name: JSON}; no secret), `named_by` the key of it that names the row to a
    reader, kept in a change's before and after whether it changed or not. A save that changes none
    of them (a health check's `update()` sends no signal) records nothing. Connected by the app that
    owns the model."""
    added, changed, deleted = (Action(f"{kind}_{what}") for what in ("added", "changed", "deleted"))

    def before(sender, instance, update_fields=None, **kwargs):
        instance._agui_audit_shown = None
        if instance.pk is None or (update_fields is not None and not set(update_fields) & set(fields)):
            return
        stored = sender._base_manager.filter(pk=instance.pk).only(*fields).first()
        instance._agui_audit_shown = shown(stored) if stored is not None else None

    def saved(sender, instance, created, **kwargs):
        was, instance._agui_audit_shown = getattr(instance, "_agui_audit_shown", None), None
        now = shown(instance)
        if created:
            _record(added, ref(instance), None, now)
        elif was is not None:
            keys = [k for k in now if was.get(k) != now[k]]
            if keys:
                keys = [named_by, *(k for k in keys if k != named_by)]
                _record(changed, ref(instance), {k: was.get(k) for k in keys}, {k: now[k] for k in keys})

    def gone(sender, instance, **kwargs):
        _record(deleted, ref(instance), shown(instance), None)

    uid = f"account_audit_{kind}"
    pre_save.connect(before, sender=model, weak=False, dispatch_uid=f"{uid}_pre_save")
    post_save.connect(saved, sender=model, weak=False, dispatch_uid=f"{uid}_post_save")
    post_delete.connect(gone, sender=model, weak=False, dispatch_uid=f"{uid}_post_delete")


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
    if event.action in CONNECTION_ACTIONS:
        return _connection_summary(event.action, before, after)
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


# what changed of a connection, in the reader's words (the recorded keys: webhooks/apps.py, mcp_servers/apps.py)
_CONNECTION_FIELDS = {"url": gettext_lazy("address"), "name": gettext_lazy("name"), "events": gettext_lazy("events"),
                      "description": gettext_lazy("description"), "transport": gettext_lazy("transport"),
                      "command": gettext_lazy("command"), "args": gettext_lazy("arguments"),
                      "cwd": gettext_lazy("working directory"), "env": gettext_lazy("environment variables"),
                      "headers": gettext_lazy("headers"), "agents": gettext_lazy("agents")}


def _connection_summary(action, before, after):
    row = after or before
    if action.startswith("webhook_"):
        name = row.get("url") or "?"
        said = {Action.WEBHOOK_ADDED: _("webhook %(name)s added"), Action.WEBHOOK_DELETED: _("webhook %(name)s deleted"),
                Action.WEBHOOK_CHANGED: _("webhook %(name)s changed: %(what)s")}
        switch = "is_active"
    else:
        name = row.get("name") or "?"
        said = {Action.MCP_SERVER_ADDED: _("MCP server %(name)s added"),
                Action.MCP_SERVER_DELETED: _("MCP server %(name)s deleted"),
                Action.MCP_SERVER_CHANGED: _("MCP server %(name)s changed: %(what)s")}
        switch = "enabled"
    if action in (Action.WEBHOOK_CHANGED, Action.MCP_SERVER_CHANGED):
        name = before.get("url" if action == Action.WEBHOOK_CHANGED else "name") or name  # as it was named
        what = [(_("switched on") if after[switch] else _("switched off")) if key == switch
                else str(_CONNECTION_FIELDS.get(key, key)) for key in after if before.get(key) != after[key]]
        return said[action] % {"name": name, "what": ", ".join(what)}
    return said[action] % {"name": name}
