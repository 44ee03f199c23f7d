"""Small helpers every part of the offline demo model uses: a tool call, the tool names, a message's text."""

import json
import re
import uuid

from django.utils import translation
from django.utils.translation import gettext as _

from agents.runtime.sentences import person_words

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


# The "Error: …, so <tool> was not executed." the runner wraps a refusal in before policy is asked
_NOT_EXECUTED = re.compile(r"^(?P<why>.*), so \w+ was not executed\.$", re.S)


def retell_result(result):
    """A tool's result or refusal as the person is told it in their language: in the tool's own sentence
    (agents/runtime/sentences.py); the model's own copy of the result (the tool message) stays as the tool
    wrote it. A result no sentence words is quoted as the tool wrote it."""
    text = result.strip()
    refused = _NOT_EXECUTED.match(text)
    said = person_words(refused["why"] if refused else text)
    if said is not None:
        return _("%(why)s, so it was not done.") % {"why": said} if refused else said
    if translation.get_language() in (None, "en"):
        return result
    return _("the tool answered: “%(result)s”") % {"result": text}
