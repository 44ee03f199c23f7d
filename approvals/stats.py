"""The inbox's statistics: outcome rates, time to decision, suspiciously fast decisions, rejection
reasons and a chart over time, per tool and per agent, over the requests a user may see.

The database counts (grouped reads of the window: status IN (...) AND created_at >= since walks
approval_status_recent_idx once per status) and subtracts the timestamps; percentiles are taken
here, from the durations alone, because SQLite has no percentile aggregate.
"""

import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta

from django.db.models import Count, DateTimeField, FloatField, Func, IntegerField, Value
from django.utils import dateformat, formats, timezone
from django.utils.translation import gettext_lazy

from . import selectors
from .models import ApprovalRequest, Decision, OutsideCall

Status = ApprovalRequest.Status
FAST_SECONDS = 2.0  # a decision this soon after the request was asked is flagged as possible rubber-stamping
# the rates' denominator; "responded" (not run, the reviewer answered with guidance) is an outcome of its own
OUTCOMES = [Status.APPROVED, Status.MODIFIED, Status.REJECTED, Status.RESPONDED, Status.EXPIRED]
PERSON_DECIDED = {Status.APPROVED, Status.MODIFIED, Status.REJECTED, Status.RESPONDED}
CHART_SERIES = [  # (status, label, css class) bottom to top
    (Status.APPROVED, gettext_lazy("approved"), "s-approved"),
    (Status.MODIFIED, gettext_lazy("approved with edits"), "s-modified"),
    (Status.REJECTED, gettext_lazy("rejected"), "s-rejected"),
    (Status.RESPONDED, gettext_lazy("answered with guidance"), "s-responded"),
    (Status.EXPIRED, gettext_lazy("expired"), "s-expired"),
    (Status.CANCELLED, gettext_lazy("cancelled"), "s-cancelled"),
    (Status.PENDING, gettext_lazy("pending"), "s-pending"),
]
DAY_CHOICES = (1, 7, 30, 90)


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list (q in 0..1)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _reason_key(text):
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip(" .!")


@dataclass
class Group:
    key: str
    requests: int = 0
    counts: Counter = field(default_factory=Counter)
    durations: list = field(default_factory=list)  # seconds from request to a person's final decision
    decisions: int = 0
    fast: int = 0

    @property
    def pending(self):
        return self.counts[Status.PENDING]

    @property
    def cancelled(self):
        return self.counts[Status.CANCELLED]

    @property
    def resolved(self):
        return sum(self.counts[s] for s in OUTCOMES)

    def rate(self, status):
        return self.counts[status] / self.resolved if self.resolved else None

    @property
    def approved_rate(self):
        return self.rate(Status.APPROVED)

    @property
    def modified_rate(self):
        return self.rate(Status.MODIFIED)

    @property
    def rejected_rate(self):
        return self.rate(Status.REJECTED)

    @property
    def responded_rate(self):
        return self.rate(Status.RESPONDED)

    @property
    def expired_rate(self):
        return self.rate(Status.EXPIRED)

    @property
    def median(self):
        return statistics.median(self.durations) if self.durations else None

    @property
    def p90(self):
        return percentile(self.durations, 0.9) if self.durations else None

    @property
    def fast_share(self):
        return self.fast / self.decisions if self.decisions else None


class Seconds(Func):
    """Seconds from one datetime to another, as a float the database computes (fetching 100,000
    datetime pairs to subtract them here cost more than everything else on the page)."""

    output_field = FloatField()
    templates = {
        "postgresql": "EXTRACT(EPOCH FROM (%(end)s - %(start)s))::float8",
        # julianday() keeps ~40 µs of a date: rounding to the millisecond gives exact milliseconds back
        "sqlite": "ROUND((julianday(%(end)s) - julianday(%(start)s)) * 86400.0, 3)",
    }

    def __init__(self, start, end, **extra):
        super().__init__(start, end, **extra)

    def as_sql(self, compiler, connection, **extra):
        (start, start_params), (end, end_params) = (compiler.compile(e) for e in self.source_expressions)
        template = self.templates[connection.vendor]
        first_end = template.index("%(end)s") < template.index("%(start)s")
        params = (*end_params, *start_params) if first_end else (*start_params, *end_params)
        return template % {"start": start, "end": end}, params


class Steps(Seconds):
    """Whole `step`-second steps from `start` to `end` (end >= start): the chart's bucket, counted
    natively (Django's Trunc is a Python function per row on SQLite, and its time zones are tzdata's,
    which SQLite has not). `pieces`: where the reader's calendar leaves the `step` grid (chart_pieces),
    ((from, bar, stepping), ...) latest first: at or past `from` seconds, `bar` and, when stepping, the
    whole steps since `from`."""

    output_field = IntegerField()

    def __init__(self, start, end, step, pieces=()):
        self.step, self.pieces = int(step), tuple((int(a), int(b), bool(c)) for a, b, c in pieces)
        super().__init__(start, end)

    def as_sql(self, compiler, connection, **extra):
        sql, params = super().as_sql(compiler, connection, **extra)
        # SQLite: CAST truncates, and what it casts is >= 0
        whole = "CAST(FLOOR({}) AS INTEGER)" if connection.vendor == "postgresql" else "CAST({} AS INTEGER)"
        steps = whole.format(f"({sql}) / {self.step}")
        if not self.pieces:
            return steps, params
        # the integers are ours, not the reader's: written into the SQL as numbers
        cases = " ".join(
            f"WHEN ({sql}) >= {since} THEN " + (f"{bar} + " + whole.format(f"(({sql}) - {since}) / {self.step}")
                                                 if stepping else str(bar))
            for since, bar, stepping in self.pieces)
        params = params * sum(2 if stepping else 1 for _, _, stepping in self.pieces) + params
        return f"CASE {cases} ELSE {steps} END", params


# rows of the per-tool and per-agent tables: an outside agent names itself and its tools, and a
# caller that put a run id in its agent name made the page one row per request (10,003 names: 1.1 MB)
TABLE_ROWS = 25


def _busiest(groups):
    """(the TABLE_ROWS groups with the most requests, how many more there are)."""
    ordered = sorted(groups.values(), key=lambda g: (-g.requests, g.key))
    return ordered[:TABLE_ROWS], max(len(ordered) - TABLE_ROWS, 0)


def compute(user, days=30, tool="", agent="", now=None):
    """The page's figures, aggregated by the database: a handful of small grouped reads instead of
    every request of the window (100,000 requests: 1.4 s before, see the README)."""
    now = now or timezone.now()
    since = now - timedelta(days=days)
    qs = selectors.visible_requests(user=user).filter(status__in=Status.values, created_at__gte=since)
    if tool:
        qs = qs.filter(tool_name=tool)
    if agent:
        qs = qs.filter(agent_name=agent)
    qs = qs.order_by()
    overall, per_tool, per_agent = Group("all"), {}, {}

    def groups_of(tool_name, agent_name):
        t = per_tool.setdefault(tool_name, Group(tool_name))
        a = per_agent.setdefault(agent_name or "(none)", Group(agent_name or "(none)"))
        return overall, t, a

    edges = chart_edges(since, now, days)
    step = 3600 if days <= 1 else 86400
    buckets = Counter()  # (bar, status) -> requests, for the chart
    step_from_start = Steps(Value(edges[0], output_field=DateTimeField()), "created_at", step,
                            chart_pieces(edges, step))
    for row in qs.values("tool_name", "agent_name", "status", step=step_from_start).annotate(n=Count("id")):
        for g in groups_of(row["tool_name"], row["agent_name"]):
            g.requests += row["n"]
            g.counts[row["status"]] += row["n"]
        buckets[row["step"], row["status"]] += row["n"]

    # time to a person's final decision, per request
    for tool_name, agent_name, seconds in (
            qs.filter(status__in=PERSON_DECIDED, decided_at__isnull=False, decided_by__isnull=False)
            .values_list("tool_name", "agent_name", Seconds("created_at", "decided_at"))):
        for g in groups_of(tool_name, agent_name):
            g.durations.append(seconds)

    reasons = defaultdict(lambda: {"count": 0, "text": "", "tools": Counter()})
    for tool_name, feedback in qs.filter(status=Status.REJECTED).exclude(feedback="").values_list(
            "tool_name", "feedback").order_by("created_at"):
        if not feedback.strip():
            continue
        entry = reasons[_reason_key(feedback)]
        entry["count"] += 1
        entry["text"] = entry["text"] or feedback.strip()
        entry["tools"][tool_name] += 1

    # every decision by a person (quorum members too), timed from the request
    decisions = Decision.objects.filter(request__in=qs.values("pk")).order_by()
    for row in decisions.values("request__tool_name", "request__agent_name").annotate(n=Count("id")):
        for g in groups_of(row["request__tool_name"], row["request__agent_name"]):
            g.decisions += row["n"]
    fast_recent, fast_by_user = [], defaultdict(int)
    for rid, username, kind, decided, seconds, tool_name, agent_name in (
            decisions.annotate(seconds=Seconds("request__created_at", "created_at"))
            .filter(seconds__lt=FAST_SECONDS).order_by("created_at")
            .values_list("request_id", "user__username", "decision", "created_at", "seconds",
                         "request__tool_name", "request__agent_name")):
        for g in groups_of(tool_name, agent_name):
            g.fast += 1
        fast_by_user[username] += 1
        fast_recent.append({"id": rid, "user": username, "decision": kind, "seconds": seconds,
                            "tool": tool_name, "at": decided})
    decided_by_user = dict(decisions.filter(user__username__in=list(fast_by_user))
                           .values("user__username").annotate(n=Count("id")).values_list("user__username", "n"))
    reviewers = sorted(
        ({"user": u, "fast": fast, "decisions": decided_by_user[u], "share": fast / decided_by_user[u]}
         for u, fast in fast_by_user.items()),
        key=lambda r: (-r["fast"], r["user"]))
    # how approved calls of agents running elsewhere went, as they reported it (POST .../outcome/)
    outcomes = defaultdict(Counter)
    for row in (OutsideCall.objects.filter(request__in=qs.values("pk")).exclude(outcome="").order_by()
                .values("request__tool_name", "outcome").annotate(n=Count("pk"))):
        outcomes[row["request__tool_name"]][row["outcome"]] += row["n"]
    (tools, more_tools), (agents, more_agents) = _busiest(per_tool), _busiest(per_agent)
    top_reasons = sorted(reasons.values(), key=lambda r: (-r["count"], r["text"]))[:10]
    for r in top_reasons:
        r["tools"] = ", ".join(t for t, _ in r["tools"].most_common())
    return {
        "days": days, "since": since, "now": now, "tool": tool, "agent": agent,
        "overall": overall,
        "per_tool": tools, "per_tool_more": more_tools,
        "per_agent": agents, "per_agent_more": more_agents,
        "reasons": top_reasons,
        "outcomes": [{"tool": t, "succeeded": c["succeeded"], "failed": c["failed"], "unknown": c["unknown"]}
                     for t, c in sorted(outcomes.items())],
        "fast_reviewers": reviewers,
        "fast_recent": list(reversed(fast_recent))[:10],
        "chart": chart(buckets, edges[:-1], days),
    }


# --- the chart: server-rendered SVG geometry (the template draws it) --------------------------

CHART_W, CHART_H = 960, 240
PAD_L, PAD_R, PAD_T, PAD_B = 44, 12, 12, 34


def _nice_max(value):
    if value <= 5:
        return 5
    magnitude = 10 ** int(math.floor(math.log10(value)))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return int(step * magnitude)
    return int(10 * magnitude)


def chart_edges(since, now, days):
    """Where the chart's bars start and the last one ends, in the reader's zone, from the bar holding
    `since` to the one holding `now`: each hour for a day, else each local midnight. Hours are an hour
    apart and days a day of the calendar, so across a daylight-saving change one day is 23 or 25 hours
    long and a local hour can come twice (a fixed 24-hour step put every day after a change an hour off)."""
    start = timezone.localtime(since).replace(minute=0, second=0, microsecond=0)
    edges = []
    if days <= 1:
        t = start.astimezone(UTC)  # an hour of elapsed time: aware arithmetic in a zone keeps the wall clock
        while not edges or edges[-1] <= now:
            edges.append(timezone.localtime(t))
            t += timedelta(hours=1)
        return edges
    day = start.date()
    while not edges or edges[-1] <= now:
        # a midnight a change skips is read with the offset before it, as zoneinfo reads any such time
        edges.append(datetime.combine(day, time(0), tzinfo=start.tzinfo))
        day += timedelta(days=1)
    return edges


def chart_pieces(edges, step):
    """Steps' pieces for bars `step` seconds long but for some (a day of 23 or 25 hours): such a bar
    whole, and the bars from the one after it on."""
    first = edges[0].astimezone(UTC)  # a difference within one zone would be of wall clocks
    at = [int((edge.astimezone(UTC) - first).total_seconds()) for edge in edges]
    pieces = []
    for bar in range(1, len(at)):
        if at[bar] - at[bar - 1] != step:
            if pieces and pieces[-1][1] == bar - 1:
                pieces[-1] = (at[bar - 1], bar - 1, False)  # two odd bars in a row: the first is its own piece
            else:
                pieces.append((at[bar - 1], bar - 1, False))
            pieces.append((at[bar], bar, True))
    return list(reversed(pieces))


def chart(counted, buckets, days):
    """Stacked bars of requests per bucket (hour for a day, else day) by outcome. `buckets`: where each
    starts (chart_edges); `counted`: {(bucket index, status): requests}."""
    hourly = days <= 1
    counts = [Counter() for _ in buckets]
    for (index, status), n in counted.items():
        if 0 <= index < len(buckets):
            counts[index][status] += n
    top = _nice_max(max((sum(c.values()) for c in counts), default=0))
    plot_w, plot_h = CHART_W - PAD_L - PAD_R, CHART_H - PAD_T - PAD_B
    slot = plot_w / max(1, len(buckets))
    bar_w = max(1.0, slot * 0.8)
    bars = []
    # the reader's order with the month abbreviated ("5 déc.", "Dec. 5", "12月5日"): a full "5 de
    # Dezembro" runs into its neighbours, and strftime's "Dec 05" is English whatever the page
    day_format = formats.get_format("MONTH_DAY_FORMAT").replace("F", "N")
    label_every = max(1, math.ceil(len(buckets) / 12))
    for i, (moment, c) in enumerate(zip(buckets, counts, strict=True)):
        x = PAD_L + i * slot + (slot - bar_w) / 2
        y = PAD_T + plot_h
        segments = []
        for status, label, css in CHART_SERIES:
            n = c[status]
            if not n:
                continue
            h = plot_h * n / top
            y -= h
            segments.append({"x": round(x, 1), "y": round(y, 1), "w": round(bar_w, 1), "h": round(h, 1),
                             "css": css, "label": label, "n": n})
        when = moment.strftime("%H:00") if hourly else dateformat.format(moment, day_format)
        # every series, zeros too: the table under the chart says what the colours do
        cells = [{"label": label, "n": c[status]} for status, label, _css in CHART_SERIES]
        bars.append({"segments": segments, "cells": cells, "total": sum(c.values()), "when": when,
                     "tick": i % label_every == 0, "tx": round(PAD_L + i * slot + slot / 2, 1)})
    ticks = [{"value": v, "y": round(PAD_T + plot_h - plot_h * v / top, 1)} for v in (0, top // 2, top)]
    return {"w": CHART_W, "h": CHART_H, "bars": bars, "ticks": ticks, "left": PAD_L, "right": CHART_W - PAD_R,
            "base": PAD_T + plot_h, "label_y": CHART_H - 10,
            "series": [{"label": label, "css": css} for _s, label, css in CHART_SERIES],
            "unit": "hour" if hourly else "day", "total": sum(sum(c.values()) for c in counts)}
