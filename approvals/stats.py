"""The inbox's statistics: outcome rates, time to decision, suspiciously fast decisions, rejection
reasons and a chart over time, per tool and per agent, over the requests a user may see.

Counts come from one indexed read of the window (status IN (...) AND created_at >= since walks
approval_status_recent_idx once per status); percentiles are computed here because neither
SQLite nor a portable ORM query offers them.
"""

import math
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from . import services
from .models import ApprovalRequest, Decision

Status = ApprovalRequest.Status
FAST_SECONDS = 2.0  # a decision this soon after the request was asked is flagged as possible rubber-stamping
OUTCOMES = [Status.APPROVED, Status.MODIFIED, Status.REJECTED, Status.EXPIRED]  # the rates' denominator
PERSON_DECIDED = {Status.APPROVED, Status.MODIFIED, Status.REJECTED}
CHART_SERIES = [  # (status, label, css class) bottom to top
    (Status.APPROVED, "approved", "s-approved"),
    (Status.MODIFIED, "approved with edits", "s-modified"),
    (Status.REJECTED, "rejected", "s-rejected"),
    (Status.EXPIRED, "expired", "s-expired"),
    (Status.CANCELLED, "cancelled", "s-cancelled"),
    (Status.PENDING, "pending", "s-pending"),
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


def compute(user, days=30, tool="", agent="", now=None):
    now = now or timezone.now()
    since = now - timedelta(days=days)
    qs = services.visible_to(user).filter(status__in=Status.values, created_at__gte=since)
    if tool:
        qs = qs.filter(tool_name=tool)
    if agent:
        qs = qs.filter(agent_name=agent)
    rows = list(qs.order_by().values_list("id", "tool_name", "agent_name", "status", "created_at", "decided_at",
                                          "decided_by_id", "feedback"))
    by_id = {r[0]: r for r in rows}
    overall, per_tool, per_agent = Group("all"), {}, {}

    def groups_of(row):
        t = per_tool.setdefault(row[1], Group(row[1]))
        a = per_agent.setdefault(row[2] or "(none)", Group(row[2] or "(none)"))
        return overall, t, a

    reasons = defaultdict(lambda: {"count": 0, "text": "", "tools": Counter()})
    for rid, tool_name, _agent, status, created, decided, decided_by, feedback in rows:
        duration = (decided - created).total_seconds() if decided and decided_by and status in PERSON_DECIDED else None
        for g in groups_of(by_id[rid]):
            g.requests += 1
            g.counts[status] += 1
            if duration is not None:
                g.durations.append(duration)
        if status == Status.REJECTED and feedback.strip():
            entry = reasons[_reason_key(feedback)]
            entry["count"] += 1
            entry["text"] = entry["text"] or feedback.strip()
            entry["tools"][tool_name] += 1

    # every decision by a person (quorum members too), timed from the request
    fast_by_user = defaultdict(lambda: {"fast": 0, "decisions": 0})
    fast_recent = []
    decisions = (Decision.objects.filter(request__in=qs.values("pk"))
                 .values_list("request_id", "user__username", "decision", "created_at").order_by("created_at"))
    for rid, username, kind, decided in decisions:
        row = by_id.get(rid)
        if row is None:
            continue
        seconds = (decided - row[4]).total_seconds()
        is_fast = seconds < FAST_SECONDS
        for g in groups_of(row):
            g.decisions += 1
            g.fast += is_fast
        fast_by_user[username]["decisions"] += 1
        if is_fast:
            fast_by_user[username]["fast"] += 1
            fast_recent.append({"id": rid, "user": username, "decision": kind, "seconds": seconds,
                                "tool": row[1], "at": decided})
    reviewers = sorted(
        ({"user": u, **v, "share": v["fast"] / v["decisions"]} for u, v in fast_by_user.items() if v["fast"]),
        key=lambda r: (-r["fast"], r["user"]))
    top_reasons = sorted(reasons.values(), key=lambda r: (-r["count"], r["text"]))[:10]
    for r in top_reasons:
        r["tools"] = ", ".join(t for t, _ in r["tools"].most_common())
    return {
        "days": days, "since": since, "now": now, "tool": tool, "agent": agent,
        "overall": overall,
        "per_tool": sorted(per_tool.values(), key=lambda g: (-g.requests, g.key)),
        "per_agent": sorted(per_agent.values(), key=lambda g: (-g.requests, g.key)),
        "reasons": top_reasons,
        "fast_reviewers": reviewers,
        "fast_recent": list(reversed(fast_recent))[:10],
        "chart": chart(rows, since, now, days),
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


def chart(rows, since, now, days):
    """Stacked bars of requests per bucket (hour for a day, else day) by outcome."""
    hourly = days <= 1
    step = timedelta(hours=1) if hourly else timedelta(days=1)
    start = timezone.localtime(since).replace(minute=0, second=0, microsecond=0)
    if not hourly:
        start = start.replace(hour=0)
    buckets = []
    t = start
    while t <= now:
        buckets.append(t)
        t += step
    counts = [Counter() for _ in buckets]
    for _rid, _tool, _agent, status, created, *_rest in rows:
        index = int((created - start) / step)
        if 0 <= index < len(buckets):
            counts[index][status] += 1
    top = _nice_max(max((sum(c.values()) for c in counts), default=0))
    plot_w, plot_h = CHART_W - PAD_L - PAD_R, CHART_H - PAD_T - PAD_B
    slot = plot_w / max(1, len(buckets))
    bar_w = max(1.0, slot * 0.8)
    bars = []
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
        when = moment.strftime("%H:00") if hourly else moment.strftime("%b %d")
        bars.append({"segments": segments, "total": sum(c.values()), "when": when,
                     "tick": i % label_every == 0, "tx": round(PAD_L + i * slot + slot / 2, 1)})
    ticks = [{"value": v, "y": round(PAD_T + plot_h - plot_h * v / top, 1)} for v in (0, top // 2, top)]
    return {"w": CHART_W, "h": CHART_H, "bars": bars, "ticks": ticks, "left": PAD_L, "right": CHART_W - PAD_R,
            "base": PAD_T + plot_h, "label_y": CHART_H - 10,
            "series": [{"label": label, "css": css} for _s, label, css in CHART_SERIES],
            "unit": "hour" if hourly else "day", "total": sum(sum(c.values()) for c in counts)}
