"""evaluate(tool, validated arguments, context) -> auto | approve (by whom) | deny.

Modes: never (auto), always (a person), deny (blocked), conditional (rules decide; no match:
auto) and model (rules first; no match: ask the model through context["ask_model"]).
A policy row overrides the tool's code defaults. Context: user, agent, thread, and optionally
ask_model(tool_name, arguments) -> {"needs_human": bool, "reason": str} (the caller's model:
this app knows nothing of agents).
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import Group

from agui_project.queries import Prepared

from . import registry, rule_words, rules
from .choices import DEFAULT_DECISIONS, RISK_ORDER, TimeoutAction
from .models import ApproverKind, Mode, ThreadGrant, ToolPolicy

log = logging.getLogger(__name__)

# every tool call's policy is looked up (the runner's authorize, an MCP tool, an outside agent's
# request): the reads below are compiled once (agui_project/queries.Prepared)
_ROW = Prepared(ToolPolicy, lambda name: ToolPolicy.objects.select_related(
    "approver_group", "escalation_group").filter(tool_name=name))
_GROUP = Prepared(Group, lambda name: Group.objects.filter(name=name))
_GRANT = Prepared(ThreadGrant, lambda tool, thread, user: ThreadGrant.objects.select_related("source_request").filter(
    tool_name=tool, thread_ref=thread, user_id=user, revoked_at__isnull=True)[:1],  # one active (Meta.constraints)
    arity=3, types=(str, str, int))


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
    reason: str = ""  # the model's self-check reason (mode model)
    reminder_fraction: float | None = None
    escalation_group: Group | None = None
    escalation_fraction: float | None = None
    grant_id: int | None = None  # "always allow in this thread" turned a gate into auto
    allowed_decisions: tuple = DEFAULT_DECISIONS


def _named_group(name):
    """The group of this name, made when a policy names it first."""
    return _GROUP.one(name) or Group.objects.get_or_create(name=name)[0]


def _group(spec):
    if spec and spec.startswith("group:"):
        return _named_group(spec.split(":", 1)[1])
    return None


def policy_rows():
    """Every admin policy by tool name, in one read (a page listing all tools asks for each)."""
    return {row.tool_name: row for row in ToolPolicy.objects.select_related("approver_group", "escalation_group")}


def effective(tool_name, rows=None):
    """The policy in force: the admin's row when there is one, else the tool's code defaults.
    `rows`: policy_rows(), when many tools are looked up at once."""
    if rows is None:
        row = _ROW.one(tool_name)
    else:
        row = rows.get(tool_name)
    source = "policy"
    if not row:
        defaults = registry.get(tool_name)
        if defaults is None:
            return None
        row, source = policy_from_defaults(defaults), "default"
    return {
        "source": source,
        "mode": row.mode,
        "conditions": row.conditions or [],
        "approver_kind": row.approver_kind,
        "group": row.approver_group,
        "required_approvals": row.required_approvals,
        "timeout_seconds": row.timeout_seconds,
        "timeout_action": row.timeout_action,
        "risk": row.risk,
        "reminder_fraction": row.reminder_fraction,
        "escalation_group": row.escalation_group,
        "escalation_fraction": row.escalation_fraction,
        "allowed_decisions": tuple(row.allowed_decisions or DEFAULT_DECISIONS),
    }


def policy_from_defaults(defaults):
    """An unsaved ToolPolicy showing a tool's code defaults (the API and admin render it)."""
    group = _group(defaults.approver)
    return ToolPolicy(
        tool_name=defaults.name, mode=defaults.mode, conditions=list(defaults.conditions),
        approver_kind=ApproverKind.GROUP if group else ApproverKind.REQUESTER, approver_group=group,
        required_approvals=defaults.required_approvals, timeout_seconds=defaults.timeout_seconds,
        timeout_action=defaults.timeout_action, risk=defaults.risk, reminder_fraction=defaults.reminder_fraction,
        escalation_group=_group(defaults.escalation), escalation_fraction=defaults.escalation_fraction,
        allowed_decisions=list(defaults.allowed_decisions),
    )


def _routed(route):
    """A gate rule's route over the policy's settings (validated when saved): its group, approvals,
    risk and deadline. A routed group takes the call away from the requester (four eyes)."""
    out = {}
    if route.get("group"):
        out.update(approver_kind=ApproverKind.GROUP, group=_named_group(route["group"]))
    if route.get("approvals"):
        out["required_approvals"] = route["approvals"]
    if route.get("risk"):
        out["risk"] = route["risk"]
    if route.get("deadline") is not None:
        out["timeout_seconds"] = rules.deadline_seconds(route["deadline"]) or settings.AGUI_DEFAULT_APPROVAL_TIMEOUT
    return out


def active_grant(tool_name, context):
    user, thread = (context or {}).get("user"), (context or {}).get("thread")
    if user is None or not thread or not getattr(user, "pk", None):
        return None
    return _GRANT.one(tool_name, str(thread), user.pk)


def _covers(grant, risk):
    """Whether a grant waives a gate of this risk: one no riskier than the request it was given
    through (a rule that routes the larger calls of a tool to a higher risk asks the person again
    for those). A grant whose request is gone waives nothing."""
    given = grant.source_request
    return given is not None and RISK_ORDER.index(risk) <= RISK_ORDER.index(given.risk)


def _ask_model(tool_name, arguments, context):
    """(needs_human, reason). Anything but a clear answer means a person decides."""
    ask = (context or {}).get("ask_model")
    if ask is None:
        return True, rule_words.NO_MODEL
    try:
        answer = ask(tool_name, arguments)
    except Exception as exc:  # the conservative answer: ask a person
        log.warning("self-check for %s failed: %s", tool_name, exc)
        return True, rule_words.CHECK_FAILED.format(error=exc)
    if not isinstance(answer, dict) or not isinstance(answer.get("needs_human"), bool):
        return True, rule_words.UNCLEAR
    reason = str(answer.get("reason") or "").strip()[:2000]
    return answer["needs_human"], reason or rule_words.NO_REASON


def evaluate(tool_name, arguments, context=None, grants=True) -> Verdict:
    """`grants`: whether a thread grant may waive a gate (False: who decides is not asked, only
    whether the call is blocked; its read is spared)."""
    p = effective(tool_name)
    if p is None:  # unknown to the engine: the safe answer is a person decides
        return Verdict("approve", matched_rule="unregistered tool",
                       timeout_seconds=settings.AGUI_DEFAULT_APPROVAL_TIMEOUT)
    common = dict(
        approver_kind=p["approver_kind"],
        group=p["group"],
        required_approvals=p["required_approvals"],
        timeout_seconds=p["timeout_seconds"] or settings.AGUI_DEFAULT_APPROVAL_TIMEOUT,
        timeout_action=p["timeout_action"],
        risk=p["risk"],
        reminder_fraction=p["reminder_fraction"],
        escalation_group=p["escalation_group"],
        escalation_fraction=p["escalation_fraction"],
        allowed_decisions=p["allowed_decisions"],
    )
    source, mode = p["source"], p["mode"]

    def gate(matched_rule, reason="", route=None):
        settings_ = {**common, **_routed(route)} if route else common
        if route and (route.get("group") or (route.get("approvals") or 1) > 1):
            # a rule that asks another group or more people: the clock never approves in their place
            settings_["timeout_action"] = TimeoutAction.REJECT
        # a grant waives the requester's approval: none where the policy no longer offers one
        if grants and settings_["approver_kind"] == ApproverKind.REQUESTER and "approve" in settings_["allowed_decisions"]:
            grant = active_grant(tool_name, context)
            if grant and _covers(grant, settings_["risk"]):
                return Verdict("auto", matched_rule=f"always allowed in this thread (grant {grant.pk})",
                               reason=reason, grant_id=grant.pk, **settings_)
        if route:
            matched_rule = f"{matched_rule} ({rules.route_text(route)})"
        return Verdict("approve", matched_rule=matched_rule, reason=reason, **settings_)

    if mode == Mode.NEVER:
        return Verdict("auto", matched_rule=f"{source}: mode never", **common)
    if mode == Mode.DENY:
        return Verdict("deny", matched_rule=f"{source}: mode deny", **common)
    if mode == Mode.ALWAYS:
        return gate(f"{source}: mode always")
    if p["conditions"]:
        try:
            match = rules.first_match(p["conditions"], rules.scope_for(tool_name, arguments, context))
        except rules.RuleBroken as exc:  # fail safe: a rule that cannot be read never lets a call through
            log.error("policy of %s: %s", tool_name, exc)
            return Verdict("approve", matched_rule=f"{source}: a rule could not be evaluated, so a person decides",
                           **common)
        except rules.Unjudgeable as exc:  # refused, not gated: a person who approves it would skip the rule
            return Verdict("deny", matched_rule=f"{source}: {exc.label}", **common)
        if match:
            label = f"{source}: {match.label}"
            if match.action == "deny":
                return Verdict("deny", matched_rule=label, **common)
            if match.action == "allow":
                return Verdict("auto", matched_rule=label, **common)
            return gate(label, route=match.route)
    if mode == Mode.CONDITIONAL:
        return Verdict("auto", matched_rule=f"{source}: no rule matched", **common)
    needs_human, reason = _ask_model(tool_name, arguments, context)
    if needs_human:
        return gate(f"{source}: mode model (the model asked for a person)", reason)
    return Verdict("auto", matched_rule=f"{source}: mode model (no person needed)", reason=reason, **common)
