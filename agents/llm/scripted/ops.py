"""The offline demo model's part for the ops agent (agents/catalog/ops.py): its demo prompts."""

import re

from django.utils.translation import gettext as _

from .common import call

OPS_HELP = (
    "I'm the offline demo model for the ops agent; I work inside a sandbox directory. Try:\n\n"
    "- *List the files*\n"
    "- *Write 'hello' to notes.txt* (then *Overwrite notes.txt with 'bye'*: you confirm it)\n"
    "- *Read notes.txt*\n"
    "- *Rename notes.txt to old-notes.txt*\n"
    "- *Delete old-notes.txt* (a reviewer decides) or *Delete /etc/hosts* (blocked by policy)\n"
    "- *Email bob@example.com subject 'Status' saying 'All good'* (a reviewer decides)\n"
    "- *Run `ls -la`* (the model checks itself whether you should confirm) or *Run `cat notes.txt`*\n"
    "- *Delete the directory logs* (denied by policy)"
)
_PATH = r"[`'\"]?(?P<{name}>[\w./~-]+?)[`'\"]?"
_QUOTED = r"[`'\"](?P<{name}>.+?)[`'\"]"
_OPS_PATTERNS = [
    ("delete_directory", re.compile(r"\b(?:delete|remove)\s+(?:the\s+)?(?:directory|folder|dir)\s+"
                                    + _PATH.format(name="path") + r"[.!?]?$", re.I)),
    ("rename_file", re.compile(r"\b(?:rename|move)\s+" + _PATH.format(name="src") + r"\s+to\s+"
                               + _PATH.format(name="dst") + r"[.!?]?$", re.I)),
    ("delete_file", re.compile(r"\b(?:delete|remove)\s+(?:the\s+file\s+)?" + _PATH.format(name="path")
                               + r"[.!?]?$", re.I)),
    ("overwrite", re.compile(r"\boverwrite\s+" + _PATH.format(name="path") + r"\s+with\s+"
                             + _QUOTED.format(name="content"), re.I)),
    ("write_file", re.compile(r"\bwrite\s+" + _QUOTED.format(name="content") + r"\s+(?:to|into)\s+"
                              + _PATH.format(name="path") + r"[.!?]?$", re.I)),
    ("read_file", re.compile(r"\b(?:read|show|open)\s+(?:the\s+file\s+)?" + _PATH.format(name="path")
                             + r"[.!?]?$", re.I)),
    ("list_files", re.compile(r"\blist\s+(?:the\s+)?files(?:\s+in\s+" + _PATH.format(name="path") + r")?", re.I)),
    ("execute_command", re.compile(r"\brun\s+" + _QUOTED.format(name="command"), re.I)),
    ("send_email", re.compile(r"\be-?mail\s+(?:to\s+)?(?P<to>[^\s@]+@[^\s@]+\.[A-Za-z]{2,})"
                              r"(?:\s+(?:with\s+)?subject\s+" + _QUOTED.format(name="subject") + r")?"
                              r"(?:\s+(?:saying|body)\s+" + _QUOTED.format(name="body") + r")?", re.I)),
]


def ops_reply(text, names):
    if "write_file" not in names:
        return None
    text = text.strip()
    for kind, pattern in _OPS_PATTERNS:
        m = pattern.search(text)
        if not m:
            continue
        g = m.groupdict()
        if kind == "list_files" and "list_files" in names:
            path = g.get("path") or "/"
            return {"text": _("Listing %(path)s.") % {"path": path}, "tool_calls": [call("list_files", {"path": path})]}
        if kind == "read_file" and "read_file" in names:
            return {"text": _("Reading %(path)s.") % g, "tool_calls": [call("read_file", {"path": g["path"]})]}
        if kind in ("write_file", "overwrite"):
            overwrite = kind == "overwrite"
            said = (_("I'll write %(count)s characters to %(path)s. This replaces its current content, so you'll "
                      "be asked to confirm.") if overwrite else _("I'll write %(count)s characters to %(path)s."))
            return {"text": said % {"count": len(g["content"]), "path": g["path"]},
                    "tool_calls": [call("write_file", {"path": g["path"], "content": g["content"],
                                                        "overwrite": overwrite})]}
        if kind == "rename_file" and "rename_file" in names:
            return {"text": _("I'll rename %(src)s to %(dst)s: that copies it, then deletes the original.") % g,
                    "tool_calls": [call("rename_file", {"source": g["src"], "destination": g["dst"]})]}
        if kind == "delete_directory" and "delete_directory" in names:
            return {"text": _("I'll delete the directory %(path)s and everything in it.") % g,
                    "tool_calls": [call("delete_directory", {"path": g["path"]})]}
        if kind == "delete_file" and "delete_file" in names:
            return {"text": _("I'll delete %(path)s. Deleting is permanent, so a reviewer decides first.") % g,
                    "tool_calls": [call("delete_file", {"path": g["path"]})]}
        if kind == "execute_command" and "execute_command" in names:
            return {"text": _("I'll run `%(command)s` in the sandbox.") % g,
                    "tool_calls": [call("execute_command", {"command": g["command"]})]}
        if kind == "send_email" and "send_email" in names:
            args = {"to": g["to"], "subject": g.get("subject") or "A note from the ops agent",
                    "body": g.get("body") or "Hello from the ops agent."}
            return {"text": _("I'll email %(to)s; a reviewer approves outgoing mail first.") % g,
                    "tool_calls": [call("send_email", args)]}
    return None
