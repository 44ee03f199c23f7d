"""Small helpers every part of the offline demo model uses: a tool call, the tool names, a message's text."""

import json
import re
import uuid


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
        return ("it was already rejected earlier in this chat"
                + (f" (\u201c{feedback[1]}\u201d)" if feedback else "") + ", so I did not ask again.")
    if "explicitly rejected" in lower:
        feedback = _FEEDBACK.search(result)
        return "it was rejected" + (f" (\u201c{feedback[1]}\u201d)" if feedback else "") + "."
    if "timed out" in lower:
        return "nobody approved it before its deadline."
    if "blocked by policy" in lower:
        return "the rules for this tool do not allow it."
    if "was cancelled and not executed" in lower:
        return "the request was withdrawn."
    changed = _CHANGED.match(result)
    if changed:
        who = "The reviewer" if changed[1] == "reviewer" else "You"
        edits = "; ".join(" from ".join(part.split(": ", 1)).replace(" -> ", " to ", 1)
                          for part in changed[2].split("; "))
        return f"{who} changed {edits} before approving. {result[changed.end():]}"
    return result[len("Error: "):] if result.startswith("Error: ") else result
