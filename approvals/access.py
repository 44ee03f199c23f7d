from django.contrib.auth import get_user_model
from django.db.models import Case, CharField, Q, Value, When
from django.db.models.functions import Concat, Lower, StrIndex, Substr, Trim
from django.db.models.lookups import Exact, GreaterThan, LessThan
from django.utils.translation import gettext as _

from . import registry, rules
from .choices import ApproverKind
from .models import ToolPolicy

# who decides an outside agent's call of a tool nobody has set a policy for (approvals/outside.py)
UNKNOWN_TOOL_GROUP = "reviewers"


def approver_group_names():
    names = set()
    for d in registry.all_tools().values():
        for spec in (d.approver, d.escalation):
            if spec.startswith("group:"):
                names.add(spec.split(":", 1)[1])
    for approver, escalation in ToolPolicy.objects.values_list("approver_group__name", "escalation_group__name"):
        names |= {n for n in (approver, escalation) if n}
    return names | {UNKNOWN_TOOL_GROUP}


def named_by(name):
    """Where group `name` is named by its name, not by a relation that follows a rename (in words for
    an admin): tools' code defaults, policies' rules, and outside agents' unknown tools (`reviewers`).
    Renamed, each would route to a new, empty group of the old name (policy._named_group), and a rule
    testing the name (`user.groups contains "frozen"`) would match nobody."""
    places = []
    rows = dict(ToolPolicy.objects.values_list("tool_name", "conditions"))
    for d in registry.all_tools().values():  # a tool's saved policy is in force instead of its defaults
        if d.name not in rows and f"group:{name}" in (d.approver, d.escalation):
            places.append(_("the code defaults of %(tool)s") % {"tool": d.name})
    for tool_name, conditions in rows.items():
        routes = any(isinstance(rule, dict) and isinstance(rule.get("route"), dict) and rule["route"].get("group") == name
                     for rule in conditions or [])
        if routes or any(tested == name for _, tested in rules.groups_tested(conditions)):
            places.append(_("the rules of the policy of %(tool)s") % {"tool": tool_name})
    if name == UNKNOWN_TOOL_GROUP:
        places.append(_("requests of outside agents for tools nobody has set a policy for"))
    return sorted(places)


def named_by_account(username):
    """Where account `username` is named by its name in policies' rules (in words for an admin): renamed,
    a rule testing `user.username eq "bob"` would match nobody (a deny on bob no longer stopped him)."""
    rows = ToolPolicy.objects.values_list("tool_name", "conditions")
    return sorted(_("the rules of the policy of %(tool)s") % {"tool": tool_name} for tool_name, conditions in rows
                  if any(name == username for _, name in rules.usernames_tested(conditions)))


def mail_key(email):
    """An address as two accounts of one person share it, "" for none: case and spaces aside, and a
    sub-address's tag dropped (alice+review@example.com is delivered to alice@example.com's mailbox,
    RFC 5233: her one-click links too), so `same_person` holds for it as for her own address."""
    address = (email or "").strip().lower()
    local, at, domain = address.partition("@")
    base = local.split("+", 1)[0]
    return f"{base}{at}{domain}" if at and base else address


def _mail_key_sql(field):
    """mail_key in SQL, on SQLite and PostgreSQL alike (their regular expressions differ)."""
    address = Lower(Trim(field))
    plus, at = StrIndex(address, Value("+")), StrIndex(address, Value("@"))
    tagged = Q(GreaterThan(plus, 1)) & Q(LessThan(plus, at))
    return Case(When(tagged, then=Concat(Substr(address, 1, plus - 1), Substr(address, at))),
                default=address, output_field=CharField())


def same_address(field, email):
    """The SQL condition that the address in `field` is `email` as mail_key reads both (for a
    non-empty `email`): the inbox's waiting list and the mail recipients apply four eyes with it."""
    return Exact(_mail_key_sql(field), mail_key(email))


def same_person(user, requester):
    """Four eyes: the requester's own account, or another account with the requester's address (a
    second account someone made to approve their own requests, which was also mailed the one-click
    links of them)."""
    if user.pk == requester.pk:
        return True
    email = mail_key(getattr(requester, "email", ""))
    return bool(email) and mail_key(getattr(user, "email", "")) == email


def decider_group_ids(req):
    """The groups that decide a request now: its approver group, and its escalation group once escalated."""
    ids = [req.approver_group_id] if req.approver_group_id else []
    if req.escalated_at and req.escalation_group_id:
        ids.append(req.escalation_group_id)
    return ids


def may_decide(user, req, group_ids):
    """Who may decide a request now, the one rule: a decision is refused by it (services.can_decide), and
    an approval of a quorum counts only while its author still passes it (selectors.quorum; the next
    approval withdraws it for good, services._decide). `group_ids`: the user's groups among those that
    decide it, as read by the caller. An account switched off decides nothing; the requester never
    decides a group's request, even as a member, nor through another account of theirs (four eyes)."""
    if not user.is_authenticated or not user.is_active:
        return False
    if req.approver_kind == ApproverKind.REQUESTER:
        return user.pk == req.requester_id
    if user.pk == req.requester_id or same_person(user, req.requester):  # the id first: no read of the requester
        return False
    return bool(set(decider_group_ids(req)) & set(group_ids))


def deciders_in(group_id, requester=None):
    """may_decide as SQL, for one group that decides a request of `requester`: its active members, never
    the requester, by account or address (four eyes). Who is mailed (mail_links.group_members) and
    whether anyone at all may decide (services' warning to the admins) both start here."""
    return _people_who_may(get_user_model().objects.filter(groups__pk=group_id, is_active=True), requester)


def deciders_among(group_ids, requester=None):
    """deciders_in for several groups at once (a request escalated is decided by both), each person once:
    whether a quorum can be reached at all (services' and the policy page's warnings)."""
    return _people_who_may(get_user_model().objects.filter(groups__pk__in=group_ids, is_active=True).distinct(),
                           requester)


def _people_who_may(qs, requester):
    if requester is not None:
        qs = qs.exclude(pk=requester.pk)
        if mail_key(requester.email):
            qs = qs.exclude(same_address("email", requester.email))
    return qs


def is_admin(user):
    """Staff and superusers: they see every request, grant and audit event, and read policies."""
    return user.is_staff or user.is_superuser


def may_edit_policy(user, kind: str) -> bool:
    """Whether `user` may `kind` ("add", "change" or "delete") a tool's policy: an admin holding that
    Django permission on tool policies, as the admin site asks. The staff flag alone (an account the
    admin site refuses) could otherwise loosen any tool's review."""
    return bool(user is not None and user.is_active and is_admin(user)
                and user.has_perm(f"approvals.{kind}_toolpolicy"))


def memberships(user):
    """(ids, names) of the user's groups, read once per user object.

    A page asks several times (the access check, the navigation, the inbox's filters and rows);
    request.user and a socket's scope user live no longer than their request or connection.
    """
    cached = getattr(user, "_agui_memberships", None)
    if cached is None:
        rows = list(user.groups.values_list("pk", "name"))
        cached = ({pk for pk, _ in rows}, {name for _, name in rows})
        user._agui_memberships = cached
    return cached


def is_reviewer(user):
    """Staff, or members of `reviewers` or of any group that decides (or is escalated) a tool."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    cached = getattr(user, "_agui_is_reviewer", None)
    if cached is None:
        cached = user._agui_is_reviewer = bool(memberships(user)[1] & approver_group_names())
    return cached
