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
# a zero-width space passed a rule on ceo@example.com and looked like it): Unicode's default-ignorable
# characters (soft hyphen, combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian
# selectors and vowel separator, zero-width space, word joiner, the invisible operators and deprecated
# format controls, the BOM, shorthand and musical format controls, and the tags, which spell ASCII text
# nobody sees), the interlinear annotation marks, the control characters (C0 but tab and line breaks, DEL,
# C1) and the line and paragraph separators, which JSON leaves unescaped so that a value drew a line of
# its own. Not the joiners text needs (ZWJ in emoji, ZWNJ in Persian and Indic words), nor a variation
# selector after a character (❤️, an ideograph's variant): only one after another (a run is data, a byte
# each, that nobody sees); nor the tags of a region's flag (🏴 gbsct).
INVISIBLE = ("\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b"
             "\u2028\u2029\u2060-\u2065\u206a-\u206f\u3164\ufeff\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3"
             "\U0001d173-\U0001d17a\U000e0000-\U000e00ff\U000e01f0-\U000e0fff")
SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
FLAG = "\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{3,6}\U000e007f"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
# a flag is matched whole (and left as it is) before its tags could be taken one by one
_CONTROL = re.compile(f"{FLAG}|[{BIDI_CONTROLS}{INVISIBLE}]|(?<=[{SELECTORS}])[{SELECTORS}]")


def mark(char: str) -> str:
    """"\u202e" -> "⟨U+202E⟩"."""
    return f"⟨U+{ord(char):04X}⟩"


def _controls(text):
    """The matches of what is written out (a region's flag is matched to be left as it is)."""
    return (m for m in _CONTROL.finditer(text) if len(m.group()) == 1)


def says_nothing(text) -> bool:
    """Whether `text` holds nothing a reader sees: blank, or only controls and invisible characters (a
    zero-width space passed as a rejection's required reason)."""
    return not _CONTROL.sub(lambda m: m.group() if len(m.group()) > 1 else "", str(text or "")).strip()


def has_controls(text) -> bool:
    return isinstance(text, str) and next(_controls(text), None) is not None


def _marked(m):
    return mark(m.group()) if len(m.group()) == 1 else m.group()


def reveal_text(text) -> str:
    """Plain text (a mail, an attribute, a page title) with each control written out."""
    return _CONTROL.sub(_marked, str(text))


def reveal_html(text) -> SafeString:
    """Escaped HTML, isolated in <bdi>, each control a marked span with its visible mark."""
    text = str(text)
    if not has_controls(text):
        return mark_safe(f"<bdi>{escape(text)}</bdi>")
    titles = {}
    parts, last = [], 0
    for m in _controls(text):
        invisible = _BIDI.match(m.group()) is None
        if invisible not in titles:
            titles[invisible] = escape(gettext("An invisible character: shown here, not hidden") if invisible
                                       else gettext("A text-direction control character: shown here, not applied"))
        parts.append(escape(text[last:m.start()]))
        parts.append(f'<span class="bidi-control" title="{titles[invisible]}">{mark(m.group())}</span>')
        last = m.end()
    parts.append(escape(text[last:]))
    return mark_safe("<bdi>" + "".join(parts) + "</bdi>")


def _escape(char):
    """A character's JSON escape; one past the BMP as its UTF-16 pair, as JSON writes it."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_escapes(text: str) -> str:
    """JSON text a person edits (the inbox's raw editor): each control as its JSON escape ("\\u202e"),
    which reads back as the same value, so the textarea shows it instead of obeying it."""
    return _CONTROL.sub(lambda m: _escape(m.group()) if len(m.group()) == 1 else m.group(), text)


WORDS_LINES, WORDS_CHARS = 12, 1000
_BLANK_RUN = re.compile(r"\n(?:[^\S\n]*\n)+")


def words_head(text) -> tuple[str, str]:
    """(what is shown at once, the rest) of a model's or requester's prose shown in a block above or among
    what a reviewer judges (an agent's reason): runs of empty lines made one, and at most WORDS_LINES
    lines or WORDS_CHARS characters at once, so that no text pushes the facts out of view (sixty empty
    lines did) or fills a screen before them. The rest is for the caller to offer, saying how much."""
    text = _BLANK_RUN.sub("\n\n", str(text or "").replace("\r\n", "\n").replace("\r", "\n").strip("\n"))
    cut = min(len(text), WORDS_CHARS)
    at = -1
    for _line in range(WORDS_LINES):
        at = text.find("\n", at + 1)
        if at < 0:
            break
    if 0 <= at < cut:
        cut = at
    return text[:cut], text[cut:].lstrip("\n")


def quoted_text(text, more) -> str:
    """Plain text (a mail) of words_head's head, each line behind "> " so that none passes for a line of
    the mail's own (a made-up "Arguments:" block, an "Approve: <link>"); `more(lines)`: the sentence
    that says how many lines are left out, or None when none are."""
    head, rest = words_head(text)
    lines = [f"> {line}".rstrip() for line in reveal_text(head).split("\n")]
    if rest:
        lines.append(f"> … {more(rest.count(chr(10)) + 1)}")
    return "\n".join(lines)
