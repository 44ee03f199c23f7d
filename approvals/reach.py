"""Whether the approvals a policy asks for can be given by the people of the groups it names.

A request that needs more approvals than its groups have people who may decide waits, looking like
any other, until its deadline: the policy page says so while it is being set, and the admins are told
of each such request when it is filed, escalated or reminded of (services._warn_if_too_few_decide).
"""

from django.contrib.auth.models import Group
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from . import access
from .choices import ApproverKind, Mode

# nobody decides in these modes: there is no quorum to reach
_NOBODY = (Mode.NEVER, Mode.DENY)


def short_quorums(policy, counted=None):
    """Sentences for an admin, one for each place of `policy` (its own settings, each gate rule's route)
    whose approvals its groups cannot give as their members stand now. Anyone may file a request, so the
    requester is not left out of the count here; a member's own request has one fewer who may decide it,
    which the warning at request time counts. `counted`: a dict kept across calls (the policy list asks
    for every tool), so each set of groups is counted once."""
    counted = {} if counted is None else counted
    if policy.mode in _NOBODY:
        return []
    base_group = policy.approver_group if policy.approver_kind == ApproverKind.GROUP else None
    places = [(_("This policy"), base_group, policy.required_approvals or 1)]
    for number, rule in enumerate(policy.conditions or [], start=1):
        route = rule.get("route") if isinstance(rule, dict) and rule.get("action") == "gate" else None
        if not isinstance(route, dict) or not (route.get("group") or route.get("approvals")):
            continue
        where = (_("Rule %(number)s (%(name)s)") % {"number": number, "name": rule["name"]} if rule.get("name")
                 else _("Rule %(number)s") % {"number": number})
        group = _by_name(route["group"]) if route.get("group") else base_group
        places.append((where, group, route.get("approvals") or policy.required_approvals or 1))
    said = []
    for where, group, needed in places:
        if group is None:  # the requester decides their own: one approval, theirs
            continue
        sentence = _short(where, group, policy.escalation_group, needed, counted)
        if sentence:
            said.append(sentence)
    return said


def _by_name(name):
    # a route names its group by its name; a group deleted since has nobody (policy makes it anew, empty)
    return Group.objects.filter(name=name).first() or Group(name=name)


def _deciders(group_ids, counted):
    key = frozenset(group_ids)
    if key not in counted:
        counted[key] = access.deciders_among(list(key)).count() if key else 0
    return counted[key]


def _short(where, group, escalation, needed, counted):
    now = _deciders([group.pk] if group.pk else [], counted)
    if now >= needed:
        return ""
    values = {"where": where, "needed": needed, "group": group.name, "count": now}
    asked = ngettext("%(where)s asks for %(needed)s approval", "%(where)s asks for %(needed)s approvals", needed) % values
    has = ngettext("%(group)s has %(count)s active member", "%(group)s has %(count)s active members", now) % values
    if escalation is not None and escalation.pk != group.pk:
        ever = _deciders([g.pk for g in (group, escalation) if g.pk], counted)
        if ever >= needed:
            return _("%(asked)s; %(has)s: its requests can be approved only once they escalate to %(escalation)s.") % {
                "asked": asked, "has": has, "escalation": escalation.name}
        return _("%(asked)s; %(has)s, and %(count)s with %(escalation)s once escalated: its requests can never be "
                 "approved. Add people to the group or ask for fewer approvals.") % {
            "asked": asked, "has": has, "count": ever, "escalation": escalation.name}
    return _("%(asked)s; %(has)s: its requests can never be approved. Add people to the group or ask for fewer "
             "approvals.") % {"asked": asked, "has": has}
