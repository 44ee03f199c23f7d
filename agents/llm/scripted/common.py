"""Small helpers every part of the offline demo model uses: a tool call, the tool names, a message's text."""

import json
import re
import uuid

from django.utils.translation import gettext as _

# seconds per streamed argument chunk: the demo's calls stream as a model's do, so a person watches
# the card (and a predicted state) fill in; an instant stream reaches the page as one frame
ARGS_PACE = 0.015


def call(name, arguments, **dumps):
    """A tool call as the model would stream it; `dumps` passes json.dumps options (ensure_ascii)."""
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "name": name, "arguments": json.dumps(arguments, **dumps)}


def tool_names(tools):
    return {t.get("function", {}).get("name") for t in tools or []}


def text_of(content):
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


_CHANGED = re.compile(r"^The (reviewer|user) changed the arguments before approving \((.*?)\)\. ", re.S)
_FEEDBACK = re.compile(r'Their feedback: "(.*)"\.', re.S)
_REPEAT_FEEDBACK = re.compile(r'Their feedback then: "(.*?)"\.', re.S)
_GUIDANCE = re.compile(r'did not run it and says: "(.*?)"\. Nothing was executed', re.S)


def guidance(result):
    """The reviewer's words of a respond (runner.guidance_text), or None."""
    found = _GUIDANCE.search(result)
    return found[1] if found else None


def retell(result):
    """A tool result retold for the person, the way a good model would: the instructions the
    runtime gives the model ("Adjust your plan…", "Do not retry it") are not repeated to them."""
    lower = result.lower()
    if "already rejected this same call" in lower:  # runner.repeat_text
        feedback = _REPEAT_FEEDBACK.search(result)
        if feedback:
            return _("it was already rejected earlier in this chat (“%(feedback)s”), so I did not ask "
                     "again.") % {"feedback": feedback[1]}
        return _("it was already rejected earlier in this chat, so I did not ask again.")
    if "explicitly rejected" in lower:
        feedback = _FEEDBACK.search(result)
        if feedback:
            return _("it was rejected (“%(feedback)s”).") % {"feedback": feedback[1]}
        return _("it was rejected.")
    if "timed out" in lower:
        return _("nobody approved it before its deadline.")
    if "blocked by policy" in lower:
        return _("the rules for this tool do not allow it.")
    if "was cancelled and not executed" in lower:
        return _("the request was withdrawn.")
    changed = _CHANGED.match(result)
    if changed:
        edits = "; ".join(_("%(field)s from %(old)s to %(new)s") % dict(zip(("field", "old", "new"), _edit(part), strict=True))
                          for part in changed[2].split("; "))
        said = (_("The reviewer changed %(edits)s before approving.") if changed[1] == "reviewer"
                else _("You changed %(edits)s before approving.")) % {"edits": edits}
        return f"{said} {retell_result(result[changed.end():])}"
    return retell_result(result[len("Error: "):] if result.startswith("Error: ") else result)


def _edit(part):
    """ "amount: 500.0 -> 450.0" -> ("amount", "500.0", "450.0")."""
    field, _sep, change = part.partition(": ")
    old, _arrow, new = change.partition(" -> ")
    return field, old, new


# The demo tools' results as the person is told them in their language; the model's own copy of a
# result (the tool message) stays as the tool wrote it.
_RESULTS = [
    (re.compile(r"^Transferred (?P<amount>\S+) (?P<currency>[A-Z]{3}) from (?P<src>\d+) to (?P<dst>\d+)\. "
                r"New balance of \d+: (?P<balance>\S+) [A-Z]{3}\.$"),
     lambda m: _("Transferred %(amount)s %(currency)s from %(src)s to %(dst)s. New balance of %(src)s: "
                 "%(balance)s %(currency)s.") % m.groupdict()),
    (re.compile(r"^Account (?P<account>\d+) holds (?P<balance>\S+) (?P<currency>[A-Z]{3})\.$"),
     lambda m: _("Account %(account)s holds %(balance)s %(currency)s.") % m.groupdict()),
    (re.compile(r"^Subscription (?P<sub>\S+) \((?P<plan>[^)]*)\) is cancelled\.$"),
     lambda m: _("Subscription %(sub)s (%(plan)s) is cancelled.") % m.groupdict()),
    (re.compile(r"^Subscription (?P<sub>\S+) was already cancelled\.$"),
     lambda m: _("Subscription %(sub)s was already cancelled.") % m.groupdict()),
]


def retell_result(result):
    for pattern, say in _RESULTS:
        found = pattern.match(result.strip())
        if found:
            return say(found)
    return result
