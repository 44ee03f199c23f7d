"""evaluate(tool, validated arguments, context) -> auto | approve (by whom) | deny."""

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import Group

from . import registry
from .models import ApproverKind, Mode, ToolPolicy


@dataclass
class Verdict:
    action: str  # "auto" | "approve" | "deny"
    approver_kind: str = ApproverKind.REQUESTER
    group: Group | None = None
    required_approvals: int = 1
    timeout_seconds: int | None = None
    timeout_action: str = "reject"
    risk: str = "medium"
    matched_rule: str = ""


def effective(tool_name):
    """The policy in force: the admin's row when there is one, else the tool's code defaults."""
    row = ToolPolicy.objects.select_related("approver_group").filter(tool_name=tool_name).first()
    if row:
        return {
            "source": "policy",
            "mode": row.mode,
            "approver_kind": row.approver_kind,
            "group": row.approver_group,
            "required_approvals": row.required_approvals,
            "timeout_seconds": row.timeout_seconds,
            "timeout_action": row.timeout_action,
            "risk": row.risk,
        }
    defaults = registry.get(tool_name)
    if defaults is None:
        return None
    kind, group = ApproverKind.REQUESTER, None
    if defaults.approver.startswith("group:"):
        kind = ApproverKind.GROUP
        group, _ = Group.objects.get_or_create(name=defaults.approver.split(":", 1)[1])
    return {
        "source": "default",
        "mode": defaults.mode,
        "approver_kind": kind,
        "group": group,
        "required_approvals": defaults.required_approvals,
        "timeout_seconds": defaults.timeout_seconds,
        "timeout_action": defaults.timeout_action,
        "risk": defaults.risk,
    }


def evaluate(tool_name, arguments, context=None) -> Verdict:
    p = effective(tool_name)
    if p is None:  # unknown to the engine: the safe answer is a person decides
        return Verdict("approve", matched_rule="unregistered tool")
    common = dict(
        approver_kind=p["approver_kind"],
        group=p["group"],
        required_approvals=p["required_approvals"],
        timeout_seconds=p["timeout_seconds"] or settings.AGUI_DEFAULT_APPROVAL_TIMEOUT,
        timeout_action=p["timeout_action"],
        risk=p["risk"],
    )
    mode = p["mode"]
    if mode == Mode.NEVER:
        return Verdict("auto", matched_rule=f"{p['source']}: mode never", **common)
    if mode == Mode.DENY:
        return Verdict("deny", matched_rule=f"{p['source']}: mode deny", **common)
    # conditional rules arrive with the approval-engine issue; until then they gate like always
    return Verdict("approve", matched_rule=f"{p['source']}: mode {mode}", **common)
