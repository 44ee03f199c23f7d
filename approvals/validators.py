"""The one validator of a tool policy: ToolPolicy.clean() (so the admin form), the REST serializer
and the code defaults' registration all call policy_errors, so a bad rule is refused when saved."""

import re

from django.utils.translation import gettext as _

from . import rules
from .choices import DECISIONS, REFUSALS, ApproverKind, Mode, Risk, TimeoutAction

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
RULE_MODES = (Mode.CONDITIONAL, Mode.MODEL)
MAX_TIMEOUT = rules.MAX_DEADLINE  # a policy's deadline, like a rule's route: at most 30 days


def _get(policy, name, default=None):
    if isinstance(policy, dict):
        return policy.get(name, default)
    return getattr(policy, name, default)


def policy_errors(policy, schema=None, check_groups=True):
    """{field: [messages]} for a ToolPolicy (instance or dict of its fields); {} when valid.

    Rule paths into arguments are checked against `schema` (the tool's arguments schema; None: not
    checked). The caller looks it up (registry.schema_of): the registry calls this validator, so
    this module does not import the registry. `check_groups`: whether a rule's route names a group
    that exists (the code defaults are registered before the database is there).
    """
    errors = {}

    def add(field, message):
        errors.setdefault(field, []).append(message)

    tool_name = _get(policy, "tool_name") or ""
    if not TOOL_NAME.match(tool_name):
        add("tool_name", _("use letters, digits, '_', '.' or '-' (at most 100)"))
    mode = _get(policy, "mode")
    if mode not in Mode.values:
        add("mode", _("must be one of %(values)s") % {"values": ", ".join(Mode.values)})

    conditions = _get(policy, "conditions")
    try:
        normalised = rules.validate(conditions, schema=schema)
    except rules.RuleError as exc:
        for message in exc.errors:
            add("conditions", message)
    else:
        if mode == Mode.CONDITIONAL and not normalised:
            add("conditions", _("mode conditional needs at least one rule"))
        elif normalised and mode not in RULE_MODES:
            add("conditions", _("rules apply only in modes %(first)s and %(second)s; clear them or change the mode")
                % dict(zip(("first", "second"), RULE_MODES, strict=True)))
        for message in _route_errors(normalised, _get(policy, "approver_kind"), check_groups):
            add("conditions", message)

    kind = _get(policy, "approver_kind")
    group = _get(policy, "approver_group")
    escalation = _get(policy, "escalation_group")
    if kind not in ApproverKind.values:
        add("approver_kind", _("must be one of %(values)s") % {"values": ", ".join(ApproverKind.values)})
    elif kind == ApproverKind.GROUP and group is None:
        add("approver_group", _("a group-routed policy needs an approver group"))
    elif kind == ApproverKind.REQUESTER and group is not None:
        add("approver_group", _("the requester decides; leave the approver group empty"))

    required = _get(policy, "required_approvals")
    if not isinstance(required, int) or required < 1:
        add("required_approvals", _("at least 1"))
    elif required > 1 and kind != ApproverKind.GROUP:
        add("required_approvals", _("only a group can give more than one approval (the requester is one person)"))
    elif required > 20:
        add("required_approvals", _("at most 20"))

    timeout = _get(policy, "timeout_seconds")
    if timeout is not None and (not isinstance(timeout, int) or timeout < 1):
        add("timeout_seconds", _("at least 1 second, or empty for the global default"))
    elif timeout is not None and timeout > MAX_TIMEOUT:
        # a deadline past the year 9999 cannot be computed: every call of the tool failed
        add("timeout_seconds", _("at most %(max)s seconds (%(days)s days), or empty for the global default")
            % {"max": MAX_TIMEOUT, "days": MAX_TIMEOUT // 86400})
    if _get(policy, "timeout_action") not in TimeoutAction.values:
        add("timeout_action", _("must be one of %(values)s") % {"values": ", ".join(TimeoutAction.values)})
    elif _get(policy, "timeout_action") == TimeoutAction.APPROVE and _get(policy, "risk") != Risk.LOW:
        add("timeout_action", _("approving on timeout is allowed only for low-risk policies; use reject"))
    if _get(policy, "risk") not in Risk.values:
        add("risk", _("must be one of %(values)s") % {"values": ", ".join(Risk.values)})

    reminder = _get(policy, "reminder_fraction")
    if reminder is not None and not (0 < reminder < 1):
        add("reminder_fraction", _("a fraction of the timeout between 0 and 1 (exclusive), or empty for none"))
    fraction = _get(policy, "escalation_fraction")
    if fraction is not None and not (0 < fraction < 1):
        add("escalation_fraction", _("a fraction of the timeout between 0 and 1 (exclusive)"))
    if escalation is not None:
        if kind != ApproverKind.GROUP:
            add("escalation_group", _("escalation applies to group-routed policies"))
        elif group is not None and _pk(escalation) == _pk(group):
            add("escalation_group", _("must differ from the approver group"))
    elif fraction is not None:
        add("escalation_fraction", _("set an escalation group first"))

    allowed = _get(policy, "allowed_decisions", None)
    if allowed is not None:
        if not isinstance(allowed, (list, tuple)) or not allowed:
            add("allowed_decisions", _("a list of at least one of %(values)s") % {"values": ", ".join(DECISIONS)})
        elif not all(isinstance(d, str) for d in allowed) or set(allowed) - set(DECISIONS):
            unknown = sorted(str(d) for d in set(allowed) - set(DECISIONS))
            add("allowed_decisions", _("unknown decision(s) %(unknown)s; use %(values)s")
                % {"unknown": ", ".join(unknown), "values": ", ".join(DECISIONS)})
        elif len(set(allowed)) != len(allowed):
            add("allowed_decisions", _("each decision at most once"))
        elif not set(allowed) & set(REFUSALS):  # approve only, at the deadline too: a review nobody could stop
            add("allowed_decisions", _("include reject or respond: the person asked must be able to say no"))
    return errors


def _route_errors(conditions, kind, check_groups):
    """What rules.validate cannot see: the groups a rule routes to or tests and the accounts it names exist,
    and more than one approval has a group."""
    routed = [(i, r["route"]) for i, r in enumerate(conditions) if isinstance(r.get("route"), dict)]
    tested = rules.groups_tested(conditions)  # a group a condition names: a typo would match nobody, silently
    names = {route["group"] for _, route in routed if route.get("group")} | {name for _, name in tested}
    known = names
    if names and check_groups:
        from django.contrib.auth.models import Group  # here: the registry imports this module at start-up

        known = set(Group.objects.filter(name__in=names).values_list("name", flat=True))
    messages = []
    for i, route in routed:
        group = route.get("group")
        if group and group not in known:
            messages.append(_("rule %(number)s.route.group: there is no group named %(group)r; create it first")
                            % {"number": i + 1, "group": group})
        if (route.get("approvals") or 1) > 1 and not group and kind != ApproverKind.GROUP:
            messages.append(_("rule %(number)s.route.approvals: only a group can give more than one approval; "
                              "name a group in the route") % {"number": i + 1})
    for i, name in tested:
        if name not in known:
            messages.append(_("rule %(number)s.when: there is no group named %(group)r; create it first")
                            % {"number": i + 1, "group": name})
    accounts = rules.usernames_tested(conditions)  # likewise an account a condition names
    if accounts and check_groups:
        from django.contrib.auth import get_user_model

        named = {name for _, name in accounts}
        known = set(get_user_model()._default_manager.filter(username__in=named).values_list("username", flat=True))
        messages += [_("rule %(number)s.when: there is no account named %(name)r; create it first")
                     % {"number": i + 1, "name": name} for i, name in accounts if name not in known]
    return messages


def _pk(obj):
    return getattr(obj, "pk", obj)
