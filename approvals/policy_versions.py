"""Optimistic concurrency for tool policies: a save based on a stale read is refused, never a silent
overwrite of another admin's change (two admins on one policy: the second save wiped the first's deny
rule, and was told "saved").

A policy's version is the digest of what it says (`services.policy_snapshot`: its row, else the
tool's code defaults), so a save that changed nothing (a row made with what the defaults said, a
save of the same values) does not make other editors' pages stale. The console's form carries it (a hidden field), the REST API gives it as the ETag and honours
If-Match. A save given no version saves as before (existing clients).
"""

from __future__ import annotations

import hashlib
import json

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils.translation import gettext, gettext_lazy

from . import selectors, services
from .access import may_edit_policy
from .models import AuditEvent, ToolPolicy
from .templatetags.inbox_tags import when

NOT_YOURS_TO_CHANGE = gettext_lazy("Your account may read tool policies but not change them: an administrator "
                                   "can give it the permissions on tool policies on the admin site.")


POLICY_ACTIONS = (AuditEvent.Action.POLICY_CREATED, AuditEvent.Action.POLICY_CHANGED, AuditEvent.Action.POLICY_DELETED)


def version_of(policy) -> str:
    """The version of `policy` (a row, a code-defaults policy not saved, or None: no such tool)."""
    text = json.dumps(services.policy_snapshot(policy), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


class PolicyChanged(Exception):
    """The policy changed since the version the caller read: who changed it last and when, if the
    audit log says."""

    def __init__(self, tool_name: str):
        super().__init__(tool_name)
        self.tool_name = tool_name
        event = (AuditEvent.objects.filter(tool_name=tool_name, action__in=POLICY_ACTIONS)  # audit_tool_idx
                 .select_related("actor").order_by("-created_at", "-id").first())
        self.by = event.actor.username if event and event.actor else None
        self.at = event.created_at if event else None


def changed_since(exc: PolicyChanged) -> str:
    """Who changed the policy after the page was drawn, and when, as far as the audit log says."""
    if exc.by and exc.at:
        return gettext("Not saved: %(name)s changed this policy (%(when)s) after you opened it.") % {
            "name": exc.by, "when": when(exc.at)}
    return gettext("Not saved: this policy changed after you opened it.")


def check(tool_name: str, seen: str | None) -> None:
    """Inside the caller's transaction: the row locked (IMMEDIATE on SQLite), then compared."""
    if seen is None:
        return
    row = ToolPolicy.objects.select_for_update().filter(tool_name=tool_name).first()
    if version_of(row or selectors.policy_for(tool_name=tool_name)) != seen:
        raise PolicyChanged(tool_name)


def _allowed(actor, kind: str) -> None:
    """The console's and the API's saves both come here: who may change a policy is checked once."""
    if not may_edit_policy(actor, kind):
        raise PermissionDenied(str(NOT_YOURS_TO_CHANGE))


def save_policy(tool_name, values, actor, seen=None):
    """services.save_policy, refused (PolicyChanged) when the policy is no longer at version `seen`
    and (PermissionDenied) to an actor without the permission to add (no row yet) or change it."""
    with transaction.atomic():
        check(tool_name, seen)
        _allowed(actor, "change" if ToolPolicy.objects.filter(tool_name=tool_name).exists() else "add")
        return services.save_policy(tool_name, values, actor)


def delete_policy(tool_name, actor, seen=None):
    """services.delete_policy, refused (PolicyChanged) when the policy is no longer at version `seen`
    and (PermissionDenied) to an actor without the permission to delete it."""
    with transaction.atomic():
        check(tool_name, seen)
        _allowed(actor, "delete")
        return services.delete_policy(tool_name, actor)
