"""The rule that matched a call, in the reader's words.

`ApprovalRequest.matched_rule` keeps the engine's own record, in English ("policy: rule 2 (large or
foreign): gate (treasury, 2 approvals, critical risk)", written by policy.evaluate); the REST API, the
model and the audit's JSON read it as written. Pages say it with `said()`, per reader: its parts are
read back (the shapes policy.evaluate and outside.py write), each said with gettext. A record in no
shape known here (an outside agent's, an older wording) is shown as stored.
"""

import re

from django.utils.text import get_text_list
from django.utils.timesince import TIME_STRINGS
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from . import rules
from .choices import Risk

_SOURCES = ("policy", "default")
_RULE = re.compile(r"^rule (\d+) \((.*)\): (gate|deny|allow)(?: \((.*)\))?$", re.S)  # rules.Match.label
_UNJUDGED = re.compile(r"^rule (\d+) \((.*)\): cannot judge (\S+) \((\w+) where it compares (.+)\)$", re.S)  # rules.Unjudgeable
_APPROVALS = re.compile(r"^(\d+) approvals?$")
_RISK = re.compile(r"^(" + "|".join(rules.RISKS) + r") risk$")
_DEADLINE = re.compile(r"^(\d+) (d|h|min|s) to decide$")


def said(matched):
    """`matched_rule` as a sentence in the active language; "" for none."""
    if not matched:
        return ""
    fixed = _fixed(matched)
    if fixed:
        return fixed
    source, _sep, rest = matched.partition(": ")
    if source not in _SOURCES:
        return matched
    whose = _("the tool's policy") if source == "policy" else _("the tool's defaults")
    what = _what(rest)
    if what is None:
        return matched
    return _("%(whose)s: %(what)s") % {"whose": whose, "what": what}


def rule_part(matched):
    """What matched without whose setting it is ("rule 1 (large): blocked"), in the active language:
    a sentence that already says "policy" (an edit refused) quotes only this."""
    source, _sep, rest = matched.partition(": ")
    what = _what(rest) if source in _SOURCES else None
    return what if what is not None else said(matched)


# what policy._ask_model records when the model could not judge (the model's own reason is kept as it wrote it)
NO_MODEL = "No model was available for the self-check, so a person decides."
CHECK_FAILED = "The model's self-check failed ({error}), so a person decides."
UNCLEAR = "The model's self-check gave no clear answer, so a person decides."
NO_REASON = "(the model gave no reason)"


def self_check_said(text):
    """A request's self-check record in the reader's words: our own sentences per reader (a failure
    without its exception, which is the log's), the model's reason as it wrote it."""
    if text == NO_MODEL:
        return _("No model was available for the self-check, so a person decides.")
    if text.startswith(CHECK_FAILED.split("{", 1)[0]) and text.endswith(CHECK_FAILED.rsplit("}", 1)[1]):
        return _("The model's self-check failed, so a person decides.")
    if text == UNCLEAR:
        return _("The model's self-check gave no clear answer, so a person decides.")
    if text == NO_REASON:
        return _("(the model gave no reason)")
    return text


def _fixed(matched):
    if matched == "unregistered tool":
        return _("a tool with no policy here: a person decides")
    if matched.startswith("a tool this project does not know"):  # outside.py
        return _("a tool this project does not know: reviewers decide until an admin sets its policy")
    if re.fullmatch(r"always allowed in this thread \(grant \d+\)", matched):
        return _("always allowed in this thread")
    return ""


def _what(rest):
    words = {
        "mode never": _("it never asks"),
        "mode deny": _("it blocks every call"),
        "mode always": _("it asks a person every time"),
        "no rule matched": _("no rule matched"),
        "a rule could not be evaluated, so a person decides": _("a rule could not be evaluated, so a person decides"),
        "mode model (the model asked for a person)": _("the model's self-check asked for a person"),
        "mode model (no person needed)": _("the model's self-check found no person needed"),
    }
    if rest in words:
        return words[rest]
    unjudged = _UNJUDGED.match(rest)
    if unjudged:
        number, name, path, got, wanted = unjudged.groups()
        return _("rule %(number)s (%(name)s): blocked, because it cannot judge %(path)s given as %(got)s "
                 "(it compares %(wanted)s)") % {
            "number": number, "name": name, "path": path, "got": _kind(got),
            "wanted": get_text_list([_kind(k) for k in wanted.split(" or ")], _("or"))}
    rule = _RULE.match(rest)
    if not rule:
        return None
    number, name, action, route = rule.groups()
    text = {"gate": _("rule %(number)s (%(name)s): a person decides"),
            "deny": _("rule %(number)s (%(name)s): blocked"),
            "allow": _("rule %(number)s (%(name)s): runs at once")}[action] % {"number": number, "name": name}
    if route is None:
        return text
    routed = _route(route)
    return f"{text} ({routed})" if routed is not None else None


def _kind(kind):
    """A JSON kind (rules._json_kind) in words."""
    return {"string": _("text"), "number": _("a number"), "boolean": _("true or false"), "array": _("a list"),
            "object": _("an object"), "null": _("nothing")}.get(kind, kind)


def route_said(route):
    """A gate rule's route ({"group", "approvals", "risk", "deadline"}) in the reader's words: the
    simulator's "Review: ..." and the request page's rule."""
    if not route:
        return ""
    parts = [route["group"]] if route.get("group") else []
    if route.get("approvals"):
        count = route["approvals"]
        parts.append(ngettext("%(counter)s approval", "%(counter)s approvals", count) % {"counter": count})
    if route.get("risk") in rules.RISKS:
        parts.append(_("%(risk)s risk") % {"risk": str(Risk(route["risk"]).label).lower()})
    if route.get("deadline") is not None:
        parts.append(_("%(time)s to decide") % {"time": _time(rules.deadline_seconds(route["deadline"]) or 0)})
    return ", ".join(parts)


def _time(seconds):
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            return TIME_STRINGS[unit] % {"num": seconds // size}
    return _("%(seconds)s s") % {"seconds": seconds}


def _route(text):
    """rules.route_text's words read back ("treasury, 2 approvals, critical risk, 15 min to decide"):
    its known parts from the end; what stays in front is the group's name."""
    parts, route = text.split(", "), {}
    for key, pattern in (("deadline", _DEADLINE), ("risk", _RISK), ("approvals", _APPROVALS)):
        found = pattern.match(parts[-1]) if parts else None
        if found:
            parts.pop()
            route[key] = (f"{found[1]} {found[2]}" if key == "deadline" else found[1] if key == "risk"
                          else int(found[1]))
    if parts:
        route["group"] = ", ".join(parts)
    return route_said(route) or None
