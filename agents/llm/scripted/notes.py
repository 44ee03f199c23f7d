"""The offline demo model's part for the notes agent (agents/catalog/notes.py): the notes MCP server's tools."""

import re

from .common import call

P = "notes__"
_PATTERNS = [
    ("search", re.compile(r"\b(?:search|find|look\s+up)\s+(?:the\s+)?notes?(?:\s+(?:for|about)\s+(?P<q>.+?))?[.!?]?$", re.I)),
    ("search", re.compile(r"\b(?:list|show)\s+(?:my\s+|the\s+)?notes\b", re.I)),
    ("tag", re.compile(r"\btag\s+note\s+(?P<id>\d+)\s+(?:as\s+|with\s+)?[`'\"]?(?P<tag>[\w-]+)", re.I)),
    ("archive", re.compile(r"\barchive\s+note\s+(?P<id>\d+)", re.I)),
    ("delete", re.compile(r"\b(?:delete|remove)\s+note\s+(?P<id>\d+)", re.I)),
    ("enable_export", re.compile(r"\benable\s+(?:the\s+)?export\b", re.I)),
    ("export", re.compile(r"\bexport\s+(?:the\s+|my\s+)?notes\b", re.I)),
]
_SAY = {
    "search": "Searching the notes.",
    "tag": "I'll tag note {id} {tag}.",
    "archive": "I'll archive note {id}; the notes server asks you to confirm.",
    "delete": "I'll delete note {id}. Deleting is permanent, so a reviewer decides first.",
    "enable_export": "I'll turn on the notes server's export tool.",
    "export": "Exporting the notes.",
}


def notes_reply(text, names):
    if P + "search" not in names:
        return None
    for kind, pattern in _PATTERNS:
        m = pattern.search(text.strip())
        if not m or P + kind not in names:
            continue
        g = {k: v for k, v in m.groupdict().items() if v}
        args = {"search": {"query": g.get("q", "")}, "tag": {"note_id": int(g.get("id", 0)), "tag": g.get("tag", "")},
                "archive": {"note_id": int(g.get("id", 0))}, "delete": {"note_id": int(g.get("id", 0))},
                "enable_export": {}, "export": {}}[kind]
        return {"text": _SAY[kind].format(**g), "tool_calls": [call(P + kind, args)]}
    return {"text": "I'm the offline demo model for the notes agent. Try: *Search the notes for lease*, "
                    "*Tag note 2 urgent*, *Archive note 1* (you confirm) or *Delete note 3* (a reviewer decides)."}
