"""Formatting for the reviewer pages: rates, durations."""

from django import template

register = template.Library()


@register.filter
def pct(value):
    """0.4567 -> "46 %"; None -> "—"."""
    if value is None:
        return "—"
    return f"{value * 100:.0f} %"


@register.filter
def duration(seconds):
    """Seconds -> "1.4 s", "3 min 05 s", "2 h 10 min"; None -> "—"."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


@register.filter
def urlencode_dict(params):
    """{"tool": "a b"} -> "tool=a+b" (the template escapes the & when it prints it)."""
    from urllib.parse import urlencode

    return urlencode(params)


@register.filter
def tojson(value):
    """Compact JSON for display (the template escapes it like any text)."""
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _short(value, limit=120):
    import json

    from django.utils import timezone
    from django.utils.dateparse import parse_datetime

    if isinstance(value, str) and len(value) >= 19 and value[4:5] == "-" and value[10:11] == "T":
        moment = parse_datetime(value)  # an ISO timestamp (a deadline): as people read a time
        if moment is not None:
            return timezone.localtime(moment).strftime("%-d %b %Y, %H:%M %Z")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit - 1] + "…"


@register.filter
def changes(event):
    """An audit event's before/after as [{key, before, after}] for the keys that differ
    ("—" where a side lacks the key); a non-object side is shown whole under "value"."""
    before, after = event.before, event.after
    if not isinstance(before, dict) or not isinstance(after, dict):
        if before is None and isinstance(after, dict):
            before = {}
        elif after is None and isinstance(before, dict):
            after = {}
        else:
            return [{"key": "value", "before": "—" if before is None else _short(before),
                     "after": "—" if after is None else _short(after)}]
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in before and after.get(key) in ("", None, [], {}):
            continue  # a new, empty field says nothing
        if before.get(key) != after.get(key):
            out.append({"key": key, "before": _word(key, before[key]) if key in before else "—",
                        "after": _word(key, after[key]) if key in after else "—"})
    return out


def _word(key, value):
    """A recorded status or decision as the pages say it ("modified" -> "Approved with edits")."""
    from approvals.models import ApprovalRequest

    if key == "status" and value in ApprovalRequest.Status.values:
        return ApprovalRequest.Status(value).label
    if key == "decision" and value in ("approve", "reject"):
        return {"approve": "Approved", "reject": "Rejected"}[value]
    return _short(value)


@register.filter
def age(moment, style="ago"):
    """How long ago, in words a person says: "just now", "3 min ago", "2 h 5 min ago", "3 days ago"
    (never "0 minutes"). `style` "short" leaves out "ago" (the list's Age column)."""
    from django.utils import timezone

    if not moment:
        return "—"
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    if seconds < 60:
        return "just now"
    minutes = seconds // 60
    if minutes < 60:
        text = f"{minutes} min"
    elif minutes < 48 * 60:
        hours, rest = divmod(minutes, 60)
        text = f"{hours} h" + (f" {rest} min" if rest and hours < 10 else "")
    else:
        days = minutes // (24 * 60)
        text = f"{days} days"
    return text if style == "short" else f"{text} ago"


KEY_LABELS = {
    "status": "status", "arguments": "arguments", "feedback": "feedback", "matched_rule": "rule that matched",
    "risk": "risk", "self_check": "model self-check", "approver": "who decides",
    "required_approvals": "approvals needed", "required": "approvals needed", "approvals": "approvals so far",
    "decision": "decision", "reason": "reason", "recipients": "told", "expires_at": "deadline",
    "deciders": "who decides", "mode": "review", "conditions": "conditions", "approver_kind": "who decides",
    "approver_group": "deciding group", "timeout_seconds": "time to decide (s)", "timeout_action": "at the deadline",
    "escalation_group": "escalates to", "source": "source", "value": "value", "tool_name": "tool",
    "description": "description", "thread": "thread", "user": "reviewer", "revoked": "revoked", "via": "given through",
}


@register.filter
def key_label(key):
    """An audit record's key in words ("required_approvals" -> "approvals needed")."""
    return KEY_LABELS.get(key, str(key).replace("_", " "))


@register.filter
def pretty_json(value):
    """Indented JSON for reading (the template escapes it like any text)."""
    import json

    return json.dumps(value, indent=2, ensure_ascii=False)
