"""The inbox's queries: filters, search and keyset paging over approval requests.

Read-only (over selectors.visible_requests); every change still goes through approvals.services.
Ordering is "pending first, then recent decisions" as two segments, each walked along its own index so that a page costs the same
on page 1 and page 2,000 (no OFFSET, no full COUNT):

  pending segment   status = pending          ORDER BY created_at DESC, id DESC  (approval_status_recent_idx)
  decided segment   decided_at IS NOT NULL    ORDER BY decided_at DESC, id DESC  (approval_decided_recent_idx)

A cursor names the segment and the last row's (timestamp, id); the next page continues after it.
"""

import re
from collections import namedtuple
from dataclasses import dataclass, field, replace
from datetime import timedelta

from django.contrib.auth.models import Group
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, TextField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.db.models.lookups import Exact
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from . import registry, selectors
from .access import approver_group_names, is_admin, mail_key, memberships, same_address, same_person
from .filters import parse_moment
from .models import ApprovalRequest, ApproverKind, Decision, Risk

Status = ApprovalRequest.Status
PAGE_SIZE = 50
COUNT_CAP = 1000  # "1000+": counting every match of a broad filter would cost a full scan
MAX_SEARCH_WORDS = 8
DECIDED = [s for s in Status.values if s != Status.PENDING]
ID_LIKE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")

SCOPES = {"mine": _("Waiting for my groups"), "all": _("Everything I can see")}
STATUSES = {
    "pending": _("Pending"),
    "decided": _("Decided (any outcome)"),
    **{s: label for s, label in Status.choices if s != Status.PENDING},
    "all": _("All"),
}
AGES = {
    "": _("Any age"),
    "lt15m": _("Under 15 minutes"),
    "lt1h": _("Under 1 hour"),
    "lt24h": _("Under 24 hours"),
    "gt1h": _("Over 1 hour"),
    "gt24h": _("Over 24 hours"),
    "gt7d": _("Over 7 days"),
}
AGE_DELTAS = {"15m": timedelta(minutes=15), "1h": timedelta(hours=1), "24h": timedelta(hours=24),
              "7d": timedelta(days=7)}
RISKS = {"": _("Any risk"), **dict(Risk.choices), "high,critical": _("high or critical")}
# the columns a row shows: the JSON blobs (schema, context, arguments) stay in the database
ROW_FIELDS = ("id", "status", "tool_name", "description", "said", "risk", "requester_id", "requester__username",
              "requester__email", "requester__is_active", "approver_kind", "approver_group_id", "approver_group__name", "escalation_group_id",
              "escalation_group__name", "escalated_at", "expires_at", "agent_name", "thread_ref", "created_at",
              "decided_at", "required_approvals", "decided_by__username")
# the thread's name as its owner knows it (the runner records it beside the excerpt), not its id
ROW_NAMES = {"thread_title": KT("context__thread_title"),
             # ApprovalRequest.edited, compared in the database: the JSON blobs stay there. As text,
             # as the digest compares: jsonb's own equality holds 500 = 500.0 (jsonb keeps the number
             # as written and its keys in one order, so its text differs where the digest does, but
             # for -0.0, which its numeric reads as 0)
             "edited": ExpressionWrapper(Q(final_arguments__isnull=False) & ~Q(Exact(
                 Cast("final_arguments", TextField()), Cast("arguments", TextField()))), output_field=BooleanField())}


@dataclass(frozen=True)
class InboxQuery:
    scope: str = "mine"
    status: str = "pending"
    tool: str = ""
    agent: str = ""
    group: str = ""
    risk: str = ""
    age: str = ""
    q: str = ""
    thread: str = ""
    after: str = ""  # the cursor: "<segment>|<ISO timestamp>|<id>"
    before: str = ""  # the same, of the first row of the page after the one wanted (Previous page)

    @property
    def is_default(self):
        return replace(self, after="", before="") == InboxQuery()

    def params(self, **changes):
        """The query string of this query (with changes), defaults left out."""
        return {k: v for k, v in vars(replace(self, **changes)).items() if v != getattr(InboxQuery, k)}


def parse(params):
    """An InboxQuery from request.GET; unknown values fall back to the default, never an error."""

    def pick(name, allowed, default):
        value = (params.get(name) or "").strip()
        return value if value in allowed else default

    return InboxQuery(
        scope=pick("scope", SCOPES, "mine"),
        status=pick("status", STATUSES, "pending"),
        tool=(params.get("tool") or "").strip()[:100],
        agent=(params.get("agent") or "").strip()[:100],
        group=(params.get("group") or "").strip()[:150],
        risk=pick("risk", RISKS, ""),
        age=pick("age", AGES, ""),
        q=" ".join((params.get("q") or "").split())[:200],
        thread=(params.get("thread") or "").strip()[:200],
        after=(params.get("after") or "").strip()[:300],
        before="" if params.get("after") else (params.get("before") or "").strip()[:300],
    )


def mine(user):
    """Requests routed to the user: their groups' (and those escalated to them), less the ones they
    asked for themselves (four eyes, by account and address: access.same_person), plus
    requester-routed requests they confirm themselves."""
    routed = selectors.routed_to_groups(sorted(memberships(user)[0])) & ~Q(requester_id=user.pk)
    if mail_key(user.email):
        routed &= ~Q(same_address("requester__email", user.email))
    waiting = routed | Q(approver_kind=ApproverKind.REQUESTER, requester_id=user.pk)
    # a decision the user holds (its undo window still open) is theirs already, and so is an approval of
    # theirs that counts while it waits (a quorum waits for others; an edit withdraws it): not waiting
    # for them. It came back after its undo window, in the list and the title's count, until the others
    # approved. What they decided stays in their list of the decided.
    # (an approval by another account of theirs, by address, too: the quorum counts it as theirs)
    by_them = Q(user=user) | (Q(same_address("user__email", user.email)) if mail_key(user.email) else Q())
    approved = Exists(Decision.objects.filter(by_them, request=OuterRef("pk"), decision=Decision.Kind.APPROVE,
                                              withdrawn_at__isnull=True))
    return waiting & ~Q(held_decisions__user=user) & ~(Q(status=Status.PENDING) & approved)


def next_waiting(user, after):
    """The request to show after deciding `after`: the next one down the default list (newest
    first), else the newest one left; None at inbox zero."""
    qs = selectors.visible_requests(user=user).filter(mine(user), status=Status.PENDING).exclude(pk=after.pk)
    later = qs.filter(Q(created_at__lt=after.created_at) | Q(created_at=after.created_at, id__lt=after.pk))
    return (later.order_by("-created_at", "-id").first()
            or qs.order_by("-created_at", "-id").first())


def base(user, query):
    """Visible requests matching every filter except status and the cursor (no ordering)."""
    qs = selectors.visible_requests(user=user)
    if query.scope == "mine":
        qs = qs.filter(mine(user))
    if query.tool:
        qs = qs.filter(tool_name=query.tool)
    if query.agent:
        qs = qs.filter(agent_name=query.agent)
    if query.group:
        qs = qs.filter(selectors.routed_to_group_named(query.group))
    if query.risk:
        qs = qs.filter(risk__in=query.risk.split(","))
    if query.age:
        moment = timezone.now() - AGE_DELTAS[query.age[2:]]
        qs = qs.filter(created_at__gte=moment) if query.age.startswith("lt") else qs.filter(created_at__lt=moment)
    if query.thread:
        qs = qs.filter(thread_ref=query.thread)  # approval_thread_idx
    for word in query.q.split()[:MAX_SEARCH_WORDS]:
        if ID_LIKE.match(word):
            # a pasted request or thread id: an exact match both indexes answer at once
            qs = qs.filter(Q(pk=word) | Q(thread_ref=word))
            continue
        # On PostgreSQL each branch has a trigram index (approvals 0006): a rare word is found by
        # ORed bitmaps, a common one by the segment's walk in page order. SQLite has no such index:
        # there a rare word costs one pass over the table.
        qs = qs.filter(Q(description__icontains=word) | Q(arguments__icontains=word) | Q(thread_ref__icontains=word))
    return qs


def _segments(status):
    if status == "pending":
        return ["p"]
    if status == "all":
        return ["p", "d"]
    return ["d"]


def _segment_qs(qs, segment, status):
    if segment == "p":
        return qs.filter(status=Status.PENDING).order_by("-created_at", "-id"), "created_at"
    qs = qs.filter(decided_at__isnull=False)
    if status not in ("decided", "all"):
        qs = qs.filter(status=status)
    return qs.order_by("-decided_at", "-id"), "decided_at"


def _cursor(after):
    parts = after.split("|", 2)
    if len(parts) != 3 or parts[0] not in ("p", "d"):
        return None
    moment = parse_moment(parts[1])  # None for month 13, or a moment in year 10000 once in UTC
    if moment is None:
        return None
    return parts[0], moment, parts[2]


def _cursor_at(row, segment):
    return f"{segment}|{row['created_at' if segment == 'p' else 'decided_at'].isoformat()}|{row['id']}"


@dataclass
class Page:
    rows: list
    next_after: str = ""
    prev_before: str = ""  # the cursor of the first row, when rows come before it (a Previous page)
    total: int = 0
    total_capped: bool = False
    segments: dict = field(default_factory=dict)  # {"p": count on this page, "d": ...}


def _rows_before(qs, query, cursor, size):
    """The `size` rows just before the cursor's row in page order, and whether more come before
    them. The same indexes, walked the other way: nearest rows first, segment by segment back."""
    segments = _segments(query.status)
    back, more = [], False
    for segment in reversed(segments[:segments.index(cursor[0]) + 1]):
        seg_qs, ts_field = _segment_qs(qs, segment, query.status)
        if segment == cursor[0]:
            _, moment, first_id = cursor
            seg_qs = seg_qs.filter(**{f"{ts_field}__gte": moment}).filter(
                Q(**{f"{ts_field}__gt": moment}) | Q(**{ts_field: moment, "id__gt": first_id}))
        want = size - len(back)
        batch = list(seg_qs.reverse().values(*ROW_FIELDS, **ROW_NAMES)[:want + 1])
        for row in batch:
            row["segment"] = segment
        more = len(batch) > want
        back += batch[:want]
        if more:
            break
        if len(back) >= size:  # full: is anything left in the segments further back?
            earlier = segments[:segments.index(segment)]
            more = any(_segment_qs(qs, s, query.status)[0].exists() for s in earlier)
            break
    return back[::-1], more


def page(user, query, size=PAGE_SIZE):
    """One page of rows (dicts of ROW_FIELDS), the cursors of the next and previous pages, and a
    capped count."""
    qs = base(user, query)
    segments = _segments(query.status)
    before = _cursor(query.before) if query.before and not query.after else None
    if before and before[0] in segments:
        rows, more = _rows_before(qs, query, before, size)
        # the row the cursor names comes next; when nothing is before it this is the first page
        result = _finish(user, qs, query, rows, next_after=_cursor_at(rows[-1], rows[-1]["segment"]) if rows else "")
        result.prev_before = _cursor_at(rows[0], rows[0]["segment"]) if rows and more else ""
        return result
    cursor = _cursor(query.after) if query.after else None
    if cursor and cursor[0] in segments:
        segments = segments[segments.index(cursor[0]):]
    else:
        cursor = None
    rows, next_after = [], ""
    for segment in segments:
        seg_qs, ts_field = _segment_qs(qs, segment, query.status)
        if cursor and cursor[0] == segment:
            _, moment, last_id = cursor
            # the `<=` bound is what the index range uses; the OR then drops the rows already shown
            seg_qs = seg_qs.filter(**{f"{ts_field}__lte": moment}).filter(
                Q(**{f"{ts_field}__lt": moment}) | Q(**{ts_field: moment, "id__lt": last_id}))
        want = size - len(rows)
        batch = list(seg_qs.values(*ROW_FIELDS, **ROW_NAMES)[:want + 1])
        if len(batch) > want:
            batch = batch[:want]
            next_after = _cursor_at(batch[-1], segment)
        for row in batch:
            row["segment"] = segment
        rows += batch
        if next_after or len(rows) >= size:
            if not next_after and segment != segments[-1]:
                # this page ends exactly at the end of the pending segment
                next_after = _cursor_at(rows[-1], segment)
            break
    result = _finish(user, qs, query, rows, next_after)
    # a page reached by a cursor has rows before it: at least the one the cursor names
    result.prev_before = _cursor_at(rows[0], rows[0]["segment"]) if cursor and rows else ""
    return result


def _finish(user, qs, query, rows, next_after):
    total = count(qs, query.status)
    group_ids = memberships(user)[0]
    for row in rows:
        decorate(row, user, group_ids)
    return Page(rows=rows, next_after=next_after, total=min(total, COUNT_CAP), total_capped=total > COUNT_CAP,
                segments={s: sum(1 for r in rows if r["segment"] == s) for s in ("p", "d")})


def count(qs, status):
    """Matches of a filter, counted no further than COUNT_CAP + 1."""
    if status == "pending":
        qs = qs.filter(status=Status.PENDING)
    elif status == "decided":
        qs = qs.filter(status__in=DECIDED)
    elif status != "all":
        qs = qs.filter(status=status)
    return qs.order_by().values("pk")[:COUNT_CAP + 1].count()


# what access.same_person reads of a row's requester
_Requester = namedtuple("_Requester", "pk email")


def decorate(row, user, group_ids):
    """Labels for the template, and whether this user may decide the row (services.can_decide's rule)."""
    row["status_label"] = Status(row["status"]).label
    row["risk_label"] = Risk(row["risk"]).label
    row["requester"] = row.pop("requester__username")
    requester = _Requester(row["requester_id"], row.pop("requester__email"))
    row["decided_by"] = row.pop("decided_by__username")
    group, escalation = row.pop("approver_group__name"), row.pop("escalation_group__name")
    if row["approver_kind"] == ApproverKind.GROUP and group:
        row["approver_label"] = group + (f" + {escalation}" if row["escalated_at"] and escalation else "")
        deciders = {row["approver_group_id"]} | ({row["escalation_group_id"]} if row["escalated_at"] else set())
        row["can_decide"] = not same_person(user, requester) and bool(deciders & group_ids)
    else:
        row["approver_label"] = _("requester")
        row["can_decide"] = user.pk == row["requester_id"]
    row["can_decide"] = row["can_decide"] and row["status"] == Status.PENDING
    # tools act for the requester: an account switched off may have its calls rejected, not approved
    row["requester_off"] = row["status"] == Status.PENDING and not row.pop("requester__is_active")
    return row


def pending_mine_count(user):
    """The title badge: pending requests waiting for the user's groups (or for their own confirmation)."""
    return selectors.visible_requests(user=user).filter(mine(user), status=Status.PENDING).count()


def is_waiting_for(user, approval_id):
    return selectors.visible_requests(user=user).filter(mine(user), status=Status.PENDING, pk=approval_id).exists()


def choices(user):
    """Options of the filter selects (the inbox's and the stats page's): every tool, the agents of
    the requests the user may see (agent_names), the groups a user could filter by."""
    tools = set(registry.all_tools())
    agents = agent_names(user=user)
    if is_admin(user):
        groups = approver_group_names() | set(Group.objects.values_list("name", flat=True))
    else:
        groups = set(memberships(user)[1])
    return {"tools": sorted(tools), "agents": sorted(agents), "groups": sorted(groups)}


MAX_AGENT_NAMES = 100  # an outside agent names itself: the select shows the first hundred, in order


def agent_names(*, user):
    """The distinct agent names of the requests `user` may see (selectors.visible_requests), at
    most MAX_AGENT_NAMES of them, for the filter selects of the inbox and the stats page. All
    requests' names were once listed to every reviewer: an outside agent names itself, so the
    select told a reviewer of support what agents asked finance.

    One statement (selectors.visible_agent_names): per branch of the visibility rule and per key
    (each of the user's groups, routed or escalated to it; the user as requester; an admin's whole
    table) it steps from name to name along an index that starts with that key and the name
    (approvals 0017), so it reads about one index entry per name and key, whoever reads. Stepping
    through visible_requests' OR instead read every request of a reviewer's groups: 40-50 ms at
    100,000 requests on PostgreSQL, against 2 ms for an admin (README, Performance).
    """
    return set(selectors.visible_agent_names(user=user, limit=MAX_AGENT_NAMES))
