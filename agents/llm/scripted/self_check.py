"""The offline demo model's self-check answer (approval mode `model`): deterministic, from the action alone."""

import json
import re

from .common import text_of

_SELF_CHECK_ACTION = re.compile(r"^Action \(JSON\): (?P<json>\{.*\})$", re.M)
# reading a file's content may expose what the user did not mean to share; listing does not
_CONTENT_READERS = {"cat", "head", "tail", "grep"}


def self_check_reply(messages):
    """The offline model's self-check: deterministic, from the action alone."""
    m = _SELF_CHECK_ACTION.search(text_of(messages[-1].get("content")))
    try:
        action = json.loads(m["json"]) if m else {}
    except json.JSONDecodeError:
        action = {}
    tool, args = action.get("tool", ""), action.get("arguments") or {}
    if tool == "execute_command":
        program = str(args.get("command", "")).split()[:1]
        if program and program[0] in _CONTENT_READERS:
            answer = (True, f"`{program[0]}` prints file contents, which may be private; "
                            "the user should confirm which file they meant.")
        else:
            answer = (False, "The command only lists or counts files in the sandbox and changes nothing.")
    elif action.get("risk") in ("high", "critical") or not action.get("reversible", False):
        answer = (True, f"{tool or 'This action'} cannot be undone or is high risk, so a person should confirm it.")
    else:
        answer = (False, f"{tool or 'This action'} is reversible and low impact, and matches the task.")
    return {"text": json.dumps({"needs_human": answer[0], "reason": answer[1]})}
