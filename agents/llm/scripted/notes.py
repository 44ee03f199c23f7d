"""The offline demo model's part for the notes agent (agents/catalog/notes.py): the notes MCP server's tools."""

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

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
# said in the language of the person's message (scripted/model.py reads it under translation.override)
_SAY = {
    "search": gettext_noop("Searching the notes."),
    "tag": gettext_noop("I'll tag note %(id)s %(tag)s."),
    "archive": gettext_noop("I'll archive note %(id)s; the notes server asks you to confirm."),
    "delete": gettext_noop("I'll delete note %(id)s. Deleting is permanent, so a reviewer decides first."),
    "enable_export": gettext_noop("I'll turn on the notes server's export tool."),
    "export": gettext_noop("Exporting the notes."),
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
        said = _(_SAY[kind])
        return {"text": said % g if "%(" in said else said, "tool_calls": [call(P + kind, args)]}
    return {"text": _("I'm the offline demo model for the notes agent. Try: *Search the notes for lease*, "
                      "*Tag note 2 urgent*, *Archive note 1* (you confirm) or *Delete note 3* (a reviewer decides).")}
