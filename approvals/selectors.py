"""Reads more than one caller needs: the requests and grants a user may see, a request's quorum,
the policy in force per tool, the audit log a user may read, the deadlines that are due.

services.py holds every change; the API, the pages and the tasks read through here. Keyword
arguments only (HackSoftware's Django-Styleguide).
"""

from django.apps import apps
from django.db import connections, router
from django.db.models import Q
from django.utils import timezone

from agui_project.queries import Prepared, is_prefetched, prefetched

from . import access, account_audit, registry
from .access import is_admin, memberships, same_person
from .models import (
    ApprovalRequest,
    ApproverKind,
    AuditEvent,
    Decision,
    HeldDecision,
    ThreadGrant,
    ToolPolicy,
    arguments_hash,
)
from .policy import policy_from_defaults

Status = ApprovalRequest.Status

# a decision's answer shows the request's decisions: compiled once (agui_project/queries.Prepared)
_DECISIONS = Prepared(Decision, lambda request: Decision.objects.select_related("user").filter(request=request))


# --- requests ---------------------------------------------------------------------------------


def earlier_rejection(*, tool_name, arguments, thread_ref, since=None):
    """The latest rejected request for the same call in this thread, decided after `since` (the
    user's latest message): the same tool with equivalent arguments, by arguments_hash of the
    validated arguments (key order and spacing do not matter), as asked or as last edited. None
    when there is none. A thread has few rejections of one tool, so they are hashed here
    (approval_thread_idx finds them) rather than stored twice."""
    if not thread_ref:
        return None
    return _latest_same_call(ApprovalRequest.objects.filter(thread_ref=thread_ref, tool_name=tool_name,
                                                            status=Status.REJECTED), arguments, since)


def waiting_count(*, requester, limit):
    """How many of `requester`'s requests wait for a decision, counted up to `limit`."""
    return ApprovalRequest.objects.filter(requester=requester, status=ApprovalRequest.Status.PENDING)[:limit].count()


def earlier_outside_rejection(*, requester, tool_name, arguments, outside_thread, since=None):
    """The same for an agent that runs elsewhere: its own thread ref (context["outside"]["thread"],
    never one of our threads) and its own requests only."""
    if not outside_thread:
        return None
    return _latest_same_call(ApprovalRequest.objects.filter(
        requester=requester, tool_name=tool_name, status=Status.REJECTED, outside__isnull=False,
        context__outside__thread=outside_thread), arguments, since)


def in_thread(thread):
    """Requests of a thread as the API shows it (`thread`): ours by thread_ref, an outside agent's by
    its own ref. Those are found first (one read of the outside calls' rows) so that the list's query
    stays two indexed lookups: a JSON path in an OR would scan every request."""
    outside_ids = list(ApprovalRequest.objects.filter(outside__isnull=False, context__outside__thread=thread)
                       .values_list("pk", flat=True))
    return Q(thread_ref=thread) | Q(pk__in=outside_ids) if outside_ids else Q(thread_ref=thread)


def _latest_same_call(rejected, arguments, since):
    wanted = arguments_hash(arguments)
    # a reviewer's rejections only: a repeat the inbox answered itself is no newer decision, and an
    # agent that once retried without user_wrote_at stayed refused after the person wrote
    rejected = rejected.exclude(context__has_key="repeat_of")
    if since is not None:
        rejected = rejected.filter(decided_at__gt=since)
    for req in rejected.order_by("-decided_at")[:50]:
        if wanted in {arguments_hash(req.arguments), arguments_hash(req.current_arguments)}:
            return req
    return None


def routed_to_groups(group_ids):
    """Requests these groups decide: routed to one of them, or escalated to one of them."""
    return (Q(approver_kind=ApproverKind.GROUP, approver_group_id__in=group_ids)
            | Q(escalated_at__isnull=False, escalation_group_id__in=group_ids))


def routed_to_group_named(name):
    """The same for one group by name (the API's and the inbox's `group` filter)."""
    return Q(approver_group__name=name) | Q(escalated_at__isnull=False, escalation_group__name=name)


def visible_requests(*, user):
    """Requests a user may see: admins all; reviewers their groups' (and escalated ones); anyone their own."""
    qs = ApprovalRequest.objects.select_related("requester", "approver_group", "escalation_group")
    if is_admin(user):
        return qs
    groups = sorted(memberships(user)[0])  # ids, not a subquery: a plainer plan for every page
    return qs.filter(routed_to_groups(groups) | Q(requester=user))


# visible_agent_names: the next agent name after the last one, for one key of a branch of
# visible_requests' condition: one entry of an index that starts with the key and the name. The
# keys are written exactly as the indexes' expressions are (models.ROUTED_TO, ESCALATED_TO,
# NAMED_BY, as Django writes them in approvals 0017), or the index is not used.
_BRANCHES = {  # name: the condition on {key}, a group's id or the user's
    "every": "",  # an admin: approval_agent_decided_idx
    "routed": f"CASE WHEN approver_kind = '{ApproverKind.GROUP}' THEN approver_group_id ELSE NULL END = {{key}} AND ",
    "escalated": "CASE WHEN escalated_at IS NOT NULL THEN escalation_group_id ELSE NULL END = {key} AND ",
    "own": "CASE WHEN agent_name > '' THEN requester_id ELSE NULL END = {key} AND ",
}
_NEXT_NAME = ("(SELECT agent_name FROM {table} WHERE {condition}agent_name > {after} "
              "ORDER BY agent_name LIMIT 1)")


def visible_agent_names(*, user, limit):
    """The first `limit` distinct agent names (in order, none empty) of the requests visible_requests
    shows `user`, in one statement that reads about one index entry per name and key.

    visible_requests' condition is an OR of three branches (routed to one of the user's groups,
    escalated to one, asked by the user); none of its indexes is in name order within a branch, so
    a DISTINCT or a step from name to name over the OR read every request of the reader's groups
    (40-50 ms at 100,000 on PostgreSQL). Here each branch and key (each group, the user) walks its
    own index by recursion, name after name (a loose index scan), and the union is sorted.
    A change of visible_requests' rule is a change here too: tests/approvals/test_agent_filter.py
    compares the two for every kind of reader.
    """
    if is_admin(user):
        branches = [("every", [0])]
    else:
        groups = sorted(memberships(user)[0])
        branches = [("routed", groups), ("escalated", groups), ("own", [user.pk])] if groups else [("own", [user.pk])]
    table = ApprovalRequest._meta.db_table
    ctes, params = [], []
    for name, keys in branches:
        condition = _BRANCHES[name]
        first = _NEXT_NAME.format(table=table, condition=condition.format(key="keys.column1"), after="''")
        then = _NEXT_NAME.format(table=table, condition=condition.format(key=f"{name}.k"), after=f"{name}.name")
        ctes.append(f"{name}(k, name, depth) AS ("
                    f"SELECT keys.column1, {first}, 1 FROM (VALUES {', '.join(['(%s)'] * len(keys))}) AS keys "
                    f"UNION ALL SELECT {name}.k, {then}, {name}.depth + 1 FROM {name} "
                    f"WHERE {name}.name IS NOT NULL AND {name}.depth < {int(limit)})")
        params += keys
    union = " UNION ".join(f"SELECT name FROM {name} WHERE name IS NOT NULL" for name, _ in branches)
    sql = f"WITH RECURSIVE {', '.join(ctes)} {union} ORDER BY 1 LIMIT {int(limit)}"
    with connections[router.db_for_read(ApprovalRequest)].cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def with_decisions(*, approval):
    """`approval` with its decisions and their users read in (in order), as
    prefetch_related("decisions") would: one compiled read instead of the ORM's; no read when the
    decision that just decided it handed it its only one (services._decide)."""
    if is_prefetched(approval, "decisions"):
        return approval
    return prefetched(approval, "decisions", _DECISIONS.all(approval.pk))


def may_no_longer_decide(*, approval, decisions):
    """The authors of `decisions` (with their users) who may not decide `approval` now, by the rule
    that refuses a decision (access.may_decide): switched off, out of the groups that decide it, the
    requester or another account of theirs. Their groups among the deciding ones: one read."""
    users = {d.user_id: d.user for d in decisions}
    if not users:
        return set()
    deciders = access.decider_group_ids(approval)
    groups = {}
    if approval.approver_kind == ApproverKind.GROUP and deciders:
        if all(is_prefetched(user, "groups") for user in users.values()):  # read with a page's decisions (API list)
            groups = {pk: [g.pk for g in user.groups.all() if g.pk in deciders] for pk, user in users.items()}
        else:
            rows = apps.get_model("auth", "User_groups").objects.filter(user_id__in=list(users), group_id__in=deciders)
            for user_id, group_id in rows.values_list("user_id", "group_id"):
                groups.setdefault(user_id, []).append(group_id)
    return {pk for pk, user in users.items() if not access.may_decide(user, approval, groups.get(pk, ()))}


def quorum(*, approval):
    """Who has approved the current arguments (counted: distinct approvers of exactly these
    arguments, two accounts of one address one approver, the requester never for a group), whose approvals were of other arguments
    (`withdrawn`: by an edit), and whose approvals of these no longer count (`set_aside`: withdrawn
    when the request moved to another group or its approver could no longer decide it, or, while it
    waits, of someone who may not decide it now: switched off, out of its groups, four eyes;
    may_no_longer_decide, the rule a decision is refused by). A decided request's approvals stay as
    they were counted. Reads `approval.decisions.all()` and their users: prefetch them (with_decisions)."""
    digest = arguments_hash(approval.current_arguments)
    approvals = [d for d in approval.decisions.all() if d.decision == Decision.Kind.APPROVE]
    waiting = approval.status == Status.PENDING
    gone = may_no_longer_decide(approval=approval, decisions=[
        d for d in approvals if d.arguments_hash == digest and not d.withdrawn_at]) if waiting else set()
    counted, withdrawn, set_aside = [], [], []
    for d in approvals:
        if d.arguments_hash != digest:
            withdrawn.append(d)
        elif d.withdrawn_at or d.user_id in gone:
            set_aside.append(d)
        elif not (approval.approver_kind == ApproverKind.GROUP and d.user_id == approval.requester_id):
            # one approval per person: a second account with the same address is the same approver
            if not any(same_person(c.user, d.user) for c in counted):
                counted.append(d)
    required = approval.required_approvals
    return {"counted": counted, "withdrawn": withdrawn, "set_aside": set_aside, "required": required, "have": len(counted),
            "missing": max(0, required - len(counted)), "slots": range(required),
            "percent": min(100, round(100 * len(counted) / required)) if required else 100}


def out_of_reach(*, approval):
    """Whether a waiting group request needs more approvals than the people who may decide it now
    (access.deciders_among its deciding groups, four eyes counted): None when it can be decided, else
    {"told": whether the admins were warned of this request (services._warn_if_nobody_decides)}.
    The requester's chat says so instead of a bare "awaiting review" (agents/presenters.approval), and
    so does an AG-UI client's approval_status: asked once per request object (a pause sends both)."""
    if approval.status != Status.PENDING or approval.approver_kind != ApproverKind.GROUP:
        return None
    if hasattr(approval, "_agui_out_of_reach"):
        return approval._agui_out_of_reach
    short = None
    groups = access.decider_group_ids(approval)
    if not groups or access.deciders_among(groups, approval.requester)[:approval.required_approvals].count() \
            < approval.required_approvals:
        short = {"told": AuditEvent.objects.filter(request=approval, action__in=(
            AuditEvent.Action.NO_DECIDERS, AuditEvent.Action.TOO_FEW_DECIDERS)).exists()}
    approval._agui_out_of_reach = short
    return short


def due_request_ids(*, limit=500):
    """Pending requests past a deadline (expiry, reminder, escalation) not yet acted on."""
    now = timezone.now()
    pending = ApprovalRequest.objects.filter(status=Status.PENDING)
    ids = list(pending.filter(expires_at__lte=now).values_list("pk", flat=True)[:limit])
    ids += pending.filter(remind_at__lte=now, reminded_at__isnull=True).values_list("pk", flat=True)[:limit]
    ids += pending.filter(escalate_at__lte=now, escalated_at__isnull=True).values_list("pk", flat=True)[:limit]
    return list(dict.fromkeys(ids))


def held_by(*, user, ids=None, request=None):
    """The user's held decisions (undo window open): by id (the page after a decision), or the one
    on a request."""
    qs = HeldDecision.objects.filter(user=user).select_related("request")
    if request is not None:
        return qs.filter(request=request).first()
    return list(qs.filter(pk__in=list(ids or [])).order_by("created_at"))


def due_held_ids(*, limit=500):
    """Held decisions whose undo window has closed (held_decision_due_idx)."""
    return list(HeldDecision.objects.filter(due_at__lte=timezone.now()).order_by("due_at")
                .values_list("pk", flat=True)[:limit])


def visible_grants(*, user):
    """"Always allow in this thread" grants: staff everyone's, others their own."""
    qs = ThreadGrant.objects.select_related("user", "revoked_by")
    return qs if is_admin(user) else qs.filter(user=user)


# --- policies ---------------------------------------------------------------------------------


def _rows():
    return ToolPolicy.objects.select_related("approver_group", "escalation_group")


def policy_for(*, tool_name):
    """The admin's row, else an unsaved ToolPolicy of the tool's code defaults; None for a tool
    that has neither."""
    row = _rows().filter(tool_name=tool_name).first()
    if row:
        return row
    defaults = registry.get(tool_name)
    return policy_from_defaults(defaults) if defaults else None


def policies():
    """Every tool with a row or registered defaults, by name: [(name, policy, defaults or None)];
    `policy.pk` is None while the tool runs on its code defaults."""
    rows = {p.tool_name: p for p in _rows()}
    out = []
    for name in sorted(set(rows) | set(registry.all_tools())):
        defaults = registry.get(name)
        out.append((name, rows.get(name) or policy_from_defaults(defaults), defaults))
    return out


# --- audit ------------------------------------------------------------------------------------


def audit_actions(*, user):
    """The audit actions `user` may find rows of (the audit page's filter): account and group events
    are staff's only (audit_events), so a reviewer is not offered them."""
    if is_admin(user):
        return AuditEvent.Action.choices
    return [(value, label) for value, label in AuditEvent.Action.choices if value not in account_audit.ACCOUNT_ACTIONS]


def audit_events(*, user):
    """The audit log a user may read: staff everything, others the events of requests they can see.
    Account and group events (approvals/account_audit.py: who was made staff, put into `finance`, ...)
    name no request, so only staff read them, a reviewer not even their own."""
    qs = AuditEvent.objects.select_related("actor", "request")  # the page names the request it concerns
    if not is_admin(user):
        qs = qs.filter(request__in=visible_requests(user=user).values("pk"))
    return qs.order_by("-created_at", "-id")
