"""Formatting for the reviewer pages: rates, durations, moments, in the active language."""

from django import template
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext

from approvals import rule_words
from approvals.models import said
from people import zones

register = template.Library()


@register.filter
def rule_said(matched):
    """{{ approval.matched_rule|rule_said }}: the rule that matched in the reader's words."""
    return rule_words.said(matched)


@register.filter
def self_check_said(text):
    return rule_words.self_check_said(text)


@register.filter(name="said")
def said_filter(request, field):
    """{{ approval|said:"description" }}: the request's description or impact in the reader's
    language (approvals.models.said); a row dict or a request."""
    return said(request, field)


@register.filter
def when(moment):
    """A moment as the reader's locale writes a date and time, in the reader's time zone (the active
    one: people.middleware), named ("1 déc. 2026 11:05 UTC-3", "2 Des 2026 21:05 WIB"); None -> "—"."""
    if not moment:
        return "—"
    local = timezone.localtime(moment)
    return f"{formats.date_format(local, 'DATETIME_FORMAT')} {zones.label(local)}"


@register.filter
def pct(value):
    """0.4567 -> "46 %"; None -> "—"."""
    if value is None:
        return "—"
    return f"{formats.number_format(round(value * 100))} %"


@register.filter
def duration(seconds):
    """Seconds -> "1.4 s", "3 min 05 s", "2 h 10 min"; None -> "—"."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return _("%(seconds)s s") % {"seconds": formats.number_format(seconds, 1)}
    if seconds < 60:
        return _("%(seconds)s s") % {"seconds": formats.number_format(round(seconds))}
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return _("%(minutes)s min %(seconds)s s") % {"minutes": minutes, "seconds": f"{secs:02d}"}
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return _("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": f"{minutes:02d}"}
    days, hours = divmod(hours, 24)
    return _("%(days)s d %(hours)s h") % {"days": days, "hours": hours}


@register.filter
def urlencode_dict(params):
    """{"tool": "a b"} -> "tool=a+b" (the template escapes the & when it prints it)."""
    from urllib.parse import urlencode

    return urlencode(params)


def as_read(value):
    """`value` with its whole numbers written as people write them: JSON's 500.0 and 500 are one
    number, and the arguments' read-only view showed 500.0 where the editor and the headline say 500."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, list):
        return [as_read(v) for v in value]
    if isinstance(value, dict):
        return {k: as_read(v) for k, v in value.items()}
    return value


@register.filter
def tojson(value):
    """Compact JSON for display (the template escapes it like any text)."""
    import json

    return json.dumps(as_read(value), ensure_ascii=False, sort_keys=True)


def _short(value, limit=120):
    import json

    from django.utils.dateparse import parse_datetime

    if isinstance(value, str) and len(value) >= 19 and value[4:5] == "-" and value[10:11] == "T":
        moment = parse_datetime(value)  # an ISO timestamp (a deadline): as people read a time
        if moment is not None:
            return when(moment)
    text = value if isinstance(value, str) else json.dumps(as_read(value), ensure_ascii=False, sort_keys=True)
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


def said_value(key, value):
    """A policy's or a request's recorded value in the reader's words (the audit page's, the policy page's
    history): the engine's own word, a list of answers or a fraction were shown as such."""
    if value is None:
        return "—"
    if key == "conditions":  # whole: an admin weighs another's rules against their own draft
        return tojson(value)
    return _word(key, value)


def _word(key, value):
    """A recorded value of the policy vocabulary as the pages say it ("modified" -> "Approved with
    edits", "high" -> "High"): the stored engine words were shown as such on every language's page."""
    from approvals.choices import MODE_LABELS, ApproverKind, Risk, TimeoutAction
    from approvals.models import ApprovalRequest

    words = {
        "status": dict(ApprovalRequest.Status.choices),
        "decision": {"approve": _("Approved"), "reject": _("Rejected"), "respond": _("Answered with guidance")},
        "risk": dict(Risk.choices), "mode": MODE_LABELS, "approver_kind": dict(ApproverKind.choices),
        "timeout_action": dict(TimeoutAction.choices), "approver": {"requester": _("requester")},
    }.get(key, {})
    if isinstance(value, str) and value in words:
        return words[value]
    if key == "allowed_decisions" and isinstance(value, list):  # the answers offered, as the form names them
        offered = {"approve": _("Approve"), "edit": _("Approve with edits"), "reject": _("Reject"),
                   "respond": _("Answer with guidance")}
        return ", ".join(str(offered.get(d, d)) for d in value) or "—"
    if key.endswith("_fraction") and isinstance(value, int | float) and not isinstance(value, bool):
        percent = round(value * 100, 1)
        return _("%(percent)s%% of the time to decide") % {
            "percent": formats.number_format(int(percent) if percent.is_integer() else percent)}
    if key == "matched_rule" and isinstance(value, str):
        return rule_words.said(value) or "—"
    return _short(value)


@register.filter
def age(moment, style="ago"):
    """How long ago, in words a person says: "just now", "3 min ago", "2 h 5 min ago", "3 days ago"
    (never "0 minutes"). `style` "short" leaves out "ago" (the list's Age column)."""
    if not moment:
        return "—"
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    if seconds < 60:
        return _("just now")
    minutes = seconds // 60
    if minutes < 60:
        text = _("%(minutes)s min") % {"minutes": minutes}
    elif minutes < 48 * 60:
        hours, rest = divmod(minutes, 60)
        text = (_("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": rest} if rest and hours < 10
                else _("%(hours)s h") % {"hours": hours})
    else:
        days = minutes // (24 * 60)
        text = ngettext("%(days)s day", "%(days)s days", days) % {"days": days}
    # "ago" as each language places it ("il y a 3 min", "3 分钟前")
    return text if style == "short" else pgettext("time ago", "%(span)s ago") % {"span": text}


KEY_LABELS = {
    "status": gettext_lazy("status"),
    "arguments": gettext_lazy("arguments"),
    "feedback": gettext_lazy("feedback"),
    "matched_rule": gettext_lazy("rule that matched"),
    "risk": gettext_lazy("risk"),
    "self_check": gettext_lazy("model self-check"),
    "approver": gettext_lazy("who decides"),
    "required_approvals": gettext_lazy("approvals needed"),
    "required": gettext_lazy("approvals needed"),
    "allowed_decisions": gettext_lazy("allowed decisions"),
    "approvals": gettext_lazy("approvals so far"),
    "decision": gettext_lazy("decision"),
    "reason": gettext_lazy("reason"),
    "recipients": gettext_lazy("told"),
    "expires_at": gettext_lazy("deadline"),
    "deciders": gettext_lazy("who decides"),
    "mode": gettext_lazy("review"),
    "conditions": gettext_lazy("conditions"),
    "approver_kind": gettext_lazy("who decides"),
    "approver_group": gettext_lazy("deciding group"),
    "timeout_seconds": gettext_lazy("time to decide (s)"),
    "timeout_action": gettext_lazy("at the deadline"),
    "escalation_group": gettext_lazy("escalates to"),
    "reminder_fraction": gettext_lazy("reminder"),
    "escalation_fraction": gettext_lazy("escalation"),
    "source": gettext_lazy("source"),
    "value": gettext_lazy("value"),
    "tool_name": gettext_lazy("tool"),
    "description": gettext_lazy("description"),
    "thread": gettext_lazy("thread"),
    "user": gettext_lazy("reviewer"),
    "revoked": gettext_lazy("revoked"),
    "via": gettext_lazy("given through"),
}


@register.filter
def key_label(key):
    """An audit record's key in words ("required_approvals" -> "approvals needed")."""
    return KEY_LABELS.get(key, str(key).replace("_", " "))


@register.filter
def pretty_json(value):
    """Indented JSON for reading (the template escapes it like any text)."""
    import json

    return json.dumps(as_read(value), indent=2, ensure_ascii=False)


@register.filter(is_safe=True)
def shown(value):
    """What a requester or a model wrote, for reading: escaped, isolated (<bdi>), its text-direction
    controls written out ("⟨U+202E⟩") instead of obeyed (agui_project/visible.py)."""
    from agui_project.visible import reveal_html

    return reveal_html("" if value is None else value)


@register.filter
def shown_text(value):
    """The same rule for plain text (an attribute, a page title): the template escapes the result."""
    from agui_project.visible import reveal_text

    return reveal_text("" if value is None else value)


@register.filter(is_safe=True)
def words(value):
    """An agent's words in a block above what a reviewer judges: shown as `shown` does, empty-line runs
    made one, a dozen lines at once and the rest behind a summary that says how many lines it holds
    (agui_project/visible.words_head)."""
    from django.utils.html import format_html
    from django.utils.safestring import mark_safe

    from agui_project.visible import reveal_html, words_head

    head, rest = words_head("" if value is None else value)
    if not rest:
        return reveal_html(head)
    count = rest.count("\n") + 1
    summary = ngettext("Show the rest (%(count)s more line)", "Show the rest (%(count)s more lines)", count) % {
        "count": count}
    return mark_safe(reveal_html(head) + format_html('<details class="words-rest"><summary>{}</summary>{}</details>',
                                                     summary, reveal_html(rest)))


@register.filter
def quoted(value):
    """The same for a plain-text mail: each line quoted ("> "), what is left out said (visible.quoted_text)."""
    from agui_project.visible import quoted_text

    return quoted_text("" if value is None else value, lambda count: ngettext(
        "%(count)s more line: read them in the inbox", "%(count)s more lines: read them in the inbox", count) % {
        "count": count})


@register.filter
def mail_line(value):
    """A requester's words in a one-line place of a plain-text mail (a headline, "Impact: ..."): as
    shown_text, or, holding a line break, quoted on lines of their own, so that none passes for a
    line of the mail ("Risk: Low", "Arguments: {...}" in an outside agent's description)."""
    from agui_project.visible import reveal_text

    text = "" if value is None else str(value)
    if "\n" not in text and "\r" not in text:  # the other line breaks are written out (visible.py)
        return reveal_text(text)
    return "\n" + quoted(text)
