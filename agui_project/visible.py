"""Text-direction controls shown, never obeyed, wherever people read what a requester or a model wrote;
characters that draw nothing (a zero-width space) shown too.

U+202E (RIGHT-TO-LEFT OVERRIDE) in `Invoice \u202efdp.exe` makes a browser draw "Invoice exe.pdf", and
the reversal runs on past the value (into a JSON block's closing quote and comma). A reviewer must see
what will execute, so the bidi controls are written out as a visible mark, "⟨U+202E⟩", in a marked
span; the value is isolated (<bdi>) so what it holds cannot reorder the text around it. One rule for
the pages (the `shown` template filter, approvals/templatetags/inbox_tags.py), for plain text (mail,
attributes) and for JSON a person edits; static/js/visible-text.js is the same rule for live updates.
"""

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

# LRE RLE PDF LRO RLO, LRI RLI FSI PDI, LRM RLM, ALM
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
# characters that draw nothing at all, so that a value holding one reads as another ("ceo@example.com" with
# a zero-width space passed a rule on ceo@example.com and looked like it): soft hyphen, combining grapheme
# joiner, Hangul fillers, Khmer inherent vowels, Mongolian vowel separator, zero-width space, word joiner
# and the invisible operators, zero-width no-break space (BOM). Not the joiners text needs (ZWJ in emoji,
# ZWNJ in Persian and Indic words) nor variation selectors, which are part of what is drawn.
INVISIBLE = "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"
_CONTROL = re.compile(f"[{BIDI_CONTROLS}{INVISIBLE}]")


def mark(char: str) -> str:
    """"\u202e" -> "⟨U+202E⟩"."""
    return f"⟨U+{ord(char):04X}⟩"


def has_controls(text) -> bool:
    return isinstance(text, str) and _CONTROL.search(text) is not None


def reveal_text(text) -> str:
    """Plain text (a mail, an attribute, a page title) with each control written out."""
    return _CONTROL.sub(lambda m: mark(m.group()), str(text))


def reveal_html(text) -> SafeString:
    """Escaped HTML, isolated in <bdi>, each control a marked span with its visible mark."""
    text = str(text)
    if not _CONTROL.search(text):
        return mark_safe(f"<bdi>{escape(text)}</bdi>")
    titles = {}
    parts, last = [], 0
    for m in _CONTROL.finditer(text):
        invisible = m.group() in INVISIBLE
        if invisible not in titles:
            titles[invisible] = escape(gettext("An invisible character: shown here, not hidden") if invisible
                                       else gettext("A text-direction control character: shown here, not applied"))
        parts.append(escape(text[last:m.start()]))
        parts.append(f'<span class="bidi-control" title="{titles[invisible]}">{mark(m.group())}</span>')
        last = m.end()
    parts.append(escape(text[last:]))
    return mark_safe("<bdi>" + "".join(parts) + "</bdi>")


def json_escapes(text: str) -> str:
    """JSON text a person edits (the inbox's raw editor): each control as its JSON escape ("\\u202e"),
    which reads back as the same value, so the textarea shows it instead of obeying it."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
