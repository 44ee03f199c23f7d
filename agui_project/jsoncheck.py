"""One gate for JSON that comes from outside: nesting depth, NUL, and text that is not Unicode.

Python's json module accepts what later breaks the product: a "\\ud800" escape (and, from bytes,
UTF-8-encoded surrogates, decoded with surrogatepass) gives a str that cannot be encoded as
UTF-8, so once stored every page, stream and API answer that shows it fails; PostgreSQL cannot
store \\u0000 in text; nesting deep enough overflows the parser's recursion; NaN, Infinity and a number too large for
a double (1e999 parses as infinity) are not JSON, and neither PostgreSQL's jsonb nor SQLite's
json_valid takes them once stored (DRF's parser refuses NaN but not 1e999). Every entry point
parses with `loads` or checks with `problem`: HTTP JSON bodies (RequestLimitsMiddleware), the
AG-UI view, WebSocket frames, JSON typed into forms and DRF JSONFields (`Decoder`).

No library does this check (jsonschema cannot see a lone surrogate; orjson refuses them but
would be a second JSON parser with other differences), so it is written here.
"""

import json
import math
import re
import sys
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from django.utils.translation import gettext, gettext_noop

MAX_DEPTH = 200  # far beyond any real RunAgentInput or API body; well under the recursion limit
TOO_DEEP = gettext_noop("The JSON nests deeper than %(depth)s levels")

# What can become a NUL or a surrogate once parsed: its \u escape, a surrogate (str), or (in bytes)
# a UTF-8-encoded surrogate. A text without any is clean without walking it; a hit is confirmed by
# the walk (an escaped backslash, or a valid surrogate pair such as an emoji, is not a problem).
# A number that is not finite (NaN, Infinity, 1e999) is caught by the parse's own hooks: a regex
# for what may parse as one had to try every digit and cost twice the parse (~40 ns a byte).
_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F]|0000)")
_ESCAPE_BYTES = re.compile(rb"\\u(?:[dD][89a-fA-F]|0000)")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


@dataclass
class Refusal:
    """`text` is an English sentence with %(name)s places filled from `params`: `message` says it in
    English (where the model may read it: state/services.py), `payload()` in the language of the
    answer (HTTP bodies, AG-UI, sockets, forms; agui_project/language.py)."""

    code: str  # too_deep | nul_character | invalid_text | invalid_number
    text: str
    field: str = ""  # dotted path of the offending value ("" = the whole body)
    params: dict = dataclass_field(default_factory=dict)

    @property
    def message(self):
        return self.text % self.params

    def translated(self):
        return gettext(self.text) % self.params

    def payload(self):
        return {"message": self.translated(), "code": self.code, "field": self.field}


class Refused(ValueError):
    """Raised by `loads`; a ValueError so that callers treating bad JSON as ValueError refuse it too."""

    def __init__(self, refusal):
        super().__init__(refusal.message)
        self.refusal = refusal


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def depth_ok(raw, limit=MAX_DEPTH):
    """False when the JSON text nests arrays/objects deeper than `limit` (checked before parsing).

    Counting openers is a C-speed upper bound on the depth; only a text with more of them (a long
    history, a state of many objects) is measured, by str methods rather than a loop over every
    character (2 ms for 68 KB; now ~0.6): its escaped backslashes, then its escaped quotes dropped,
    what lies between quotes (the strings) is cut out and the brackets left are counted. On text
    that is not JSON this agrees with the parser up to its first error, where the parser stops.
    """
    if isinstance(raw, bytes | bytearray):
        if raw.count(b"[") + raw.count(b"{") <= limit:  # (not decoded for it: UTF-8 keeps ASCII bytes as they are)
            return True
        text = raw.decode(json.detect_encoding(raw), "replace")
    else:
        text = raw
    if text.count("[") + text.count("{") <= limit:
        return True
    outside = "".join(text.replace("\\\\", "").replace('\\"', "").split('"')[::2])
    depth = 0
    for bracket in _NOT_BRACKET.sub("", outside):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return False
        else:
            depth -= 1
    return True


def _path(link):
    parts = []
    while link is not None:
        key, link = link
        parts.append(_printable(str(key)))
    return ".".join(reversed(parts))


def _printable(text):
    """The text with surrogates and NUL shown as escapes: an error message must itself be valid text."""
    return _BAD_CHAR.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_BAD_TEXT = {  # (a value or a key, found at a named field) -> (NUL, lone surrogate)
    ("text", False): (
        gettext_noop("The text contains a NUL character (\\u0000), which is not accepted"),
        gettext_noop("The text is not valid Unicode: it contains an unpaired UTF-16 surrogate (\\ud800 to "
                     "\\udfff without its pair)")),
    ("text", True): (
        gettext_noop("The text at %(field)s contains a NUL character (\\u0000), which is not accepted"),
        gettext_noop("The text at %(field)s is not valid Unicode: it contains an unpaired UTF-16 surrogate "
                     "(\\ud800 to \\udfff without its pair)")),
    ("key", False): (
        gettext_noop("A key contains a NUL character (\\u0000), which is not accepted"),
        gettext_noop("A key is not valid Unicode: it contains an unpaired UTF-16 surrogate (\\ud800 to "
                     "\\udfff without its pair)")),
    ("key", True): (
        gettext_noop("A key in %(field)s contains a NUL character (\\u0000), which is not accepted"),
        gettext_noop("A key in %(field)s is not valid Unicode: it contains an unpaired UTF-16 surrogate "
                     "(\\ud800 to \\udfff without its pair)")),
}


NOT_FINITE = (  # (at the top, at a named field)
    gettext_noop("The JSON holds a number that is not finite (NaN, Infinity, or too large for a double), which "
                 "JSON does not allow"),
    gettext_noop("The number at %(field)s is not finite (NaN, Infinity, or too large for a double), which JSON "
                 "does not allow"),
)


# Python converts at most this many digits to an int (sys.get_int_max_str_digits(): a guard against
# quadratic work) and json.loads fails past it with a ValueError that names sys internals
MAX_DIGITS = sys.get_int_max_str_digits() or 4300
# from a run's first digit only: tried at every digit, a body of 4,300-digit runs took seconds
_LONG_NUMBER = re.compile(f"(?<![0-9])[0-9]{{{MAX_DIGITS + 1}}}")
TOO_MANY_DIGITS = gettext_noop("The JSON holds a number of more than %(digits)s digits, which is not accepted")


def _long_number(raw, exc):
    """The Refused to raise for json.loads's ValueError `exc` when a number was too long, else `exc`."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else raw
    if _LONG_NUMBER.search(text):
        return Refused(Refusal("invalid_number", TOO_MANY_DIGITS, params={"digits": MAX_DIGITS}))
    return exc


def _bad_text(text, where, field):
    """A Refusal of `text` (a value, or a key: `where`) found at `field`."""
    nul, surrogate = _BAD_TEXT[where, bool(field)]
    if "\x00" in text:
        return Refusal("nul_character", nul, field, {"field": field})
    return Refusal("invalid_text", surrogate, field, {"field": field})


def problem(value, max_depth=MAX_DEPTH, prefix=""):
    """The first thing wrong with a parsed JSON value (a bad text, a number that is not finite, too
    deep), as a Refusal, or None.

    Walks iteratively (no recursion limit to hit); a node's path is a (key, parent) link, so the
    walk costs O(1) per node and the dotted path is only built for the one that is refused.
    """
    root = (prefix, None) if prefix else None
    stack = [(value, root, 1)]
    while stack:
        node, link, depth = stack.pop()
        if isinstance(node, str):
            if _BAD_CHAR.search(node):
                return _bad_text(node, "text", _path(link))
            continue
        if isinstance(node, float) and not math.isfinite(node):
            field = _path(link)
            return Refusal("invalid_number", NOT_FINITE[bool(field)], field, {"field": field})
        if not isinstance(node, dict | list):
            continue
        if depth > max_depth:
            field = _path(link)
            if field:
                return Refusal("too_deep", gettext_noop("%(field)s nests deeper than %(depth)s levels"), field,
                               {"field": field, "depth": max_depth})
            return Refusal("too_deep", gettext_noop("The value nests deeper than %(depth)s levels"), "", {"depth": max_depth})
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(key, str) and _BAD_CHAR.search(key):
                return _bad_text(key, "key", _path(link))
            stack.append((child, (key, link), depth + 1))
    return None


def _may_hold_bad_text(raw):
    """Whether `raw` (JSON text or bytes) may hold a NUL or a lone surrogate once parsed."""
    if isinstance(raw, bytes | bytearray):
        if json.detect_encoding(raw) != "utf-8":
            return True  # UTF-16 or UTF-32 (json.loads takes them): walked
        return (b"\\u" in raw and _ESCAPE_BYTES.search(raw) is not None) or \
            (b"\xed" in raw and _SURROGATE_BYTES.search(raw) is not None)
    return ("\\u" in raw and _ESCAPE.search(raw) is not None) or \
        (not raw.isascii() and _SURROGATE.search(raw) is not None)


class _NotFinite(Exception):
    """Raised by the parse's hooks (not a ValueError: json.loads passes it through as it is)."""


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite
    return value


def _not_finite(text):
    raise _NotFinite


def _parse(raw, max_depth):
    """json.loads, then the walk where the text may hold what must be refused: (value, Refusal or
    None). ValueError for text that is not JSON, as json.loads."""
    try:
        value = json.loads(raw, parse_float=_finite, parse_constant=_not_finite)
    except _NotFinite:
        value = json.loads(raw)  # again, as it is, for the walk to say where
        return value, problem(value, max_depth)
    return value, (problem(value, max_depth) if _may_hold_bad_text(raw) else None)


def loads(raw, max_depth=MAX_DEPTH):
    """json.loads for input from outside: raises Refused (too deep, NUL, not Unicode, not finite)
    or the usual ValueError (json.JSONDecodeError, UnicodeDecodeError) for text that is not JSON."""
    if not depth_ok(raw, max_depth):
        raise Refused(Refusal("too_deep", TOO_DEEP, params={"depth": max_depth}))
    try:
        value, refusal = _parse(raw, max_depth)
    except ValueError as exc:
        raise _long_number(raw, exc) from None
    if refusal:
        raise Refused(refusal)
    return value


def scrub(text):
    """Text we did not get to refuse (a model's streamed output) with each NUL or lone surrogate
    replaced by U+FFFD, so it can be stored and shown; the rest of the answer is kept."""
    return _BAD_CHAR.sub("\ufffd", text)


def check_body(body):
    """For the middleware: a Refusal for a JSON body that must not reach a parser or a view, or None.
    A body that is not JSON at all passes: the view answers that in its own words."""
    if not depth_ok(body):
        return Refusal("too_deep", gettext_noop("the JSON body nests deeper than %(depth)s levels"), params={"depth": MAX_DEPTH})
    try:
        return _parse(body, MAX_DEPTH)[1]  # parsing costs less than scanning the text for suspects
    except ValueError as exc:
        found = _long_number(body, exc)
        return found.refusal if isinstance(found, Refused) else None


class Decoder(json.JSONDecoder):
    """For DRF's JSONField(decoder=...): JSON typed into a form field passes the same gate
    (a JSON body was already checked by the middleware; form text is parsed by the field)."""

    def decode(self, s, *args, **kwargs):
        if not depth_ok(s):
            raise Refused(Refusal("too_deep", TOO_DEEP, params={"depth": MAX_DEPTH}))
        try:
            value = super().decode(s, *args, **kwargs)
        except ValueError as exc:
            raise _long_number(s, exc) from None
        refusal = problem(value)
        if refusal:
            raise Refused(refusal)
        return value


def read_frame(text):
    """A WebSocket text frame -> (object, None), or (None, the error frame to send back).

    A frame that is not a JSON object is answered, not fatal: the socket stays open. `text` is None
    for a binary frame (channels passes it as bytes_data)."""
    if text is None:
        return None, {"type": "error", "code": "invalid_frame",
                      "message": gettext("A frame must be text holding a JSON object, not binary data.")}
    try:
        msg = loads(text or "{}")
    except Refused as exc:
        return None, {"type": "error", **exc.refusal.payload()}
    except ValueError:
        return None, {"type": "error", "code": "invalid_frame", "message": gettext("A frame must be a JSON object.")}
    if not isinstance(msg, dict):
        return None, {"type": "error", "code": "invalid_frame", "message": gettext("A frame must be a JSON object.")}
    return msg, None


def same(a, b):
    """Whether two JSON values are the same JSON: Python's == takes True for 1 and 1.0 for 1, so a
    client's change of one into the other was taken for no change and dropped."""
    return json.dumps(a, sort_keys=True, separators=(",", ":")) == json.dumps(b, sort_keys=True, separators=(",", ":"))
