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
            out.append({"key": key, "before": _short(before[key]) if key in before else "—",
                        "after": _short(after[key]) if key in after else "—"})
    return out
