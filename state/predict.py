"""Partial tool-argument JSON -> predicted state (an agent's `predict_state_config`).

`predict_state_config` maps a state key to a tool argument: `{"recipe": {"tool": "update_recipe",
"tool_argument": "recipe"}}`; `"tool_argument": "*"` maps all of the tool's arguments. While the
model streams a mapped call's arguments, `Prediction.feed` parses the text so far with jiter's
partial mode and hands back the predicted values when they have grown and the throttle allows;
`Prediction.finish` gives the values of the complete arguments. Pure functions: no database.
"""

import json
import time

import jiter

THROTTLE_SECONDS = 0.05  # at most one predicted delta per call per 50 ms: a burst of chunks must not flood clients
_NUMBER_TAIL = set("0123456789.-+eE")


def mappings(config, tool_name):
    """[(state_key, tool_argument)] that `tool_name` feeds."""
    return [
        (key, spec.get("tool_argument") or "*")
        for key, spec in (config or {}).items()
        if isinstance(spec, dict) and spec.get("tool") == tool_name
    ]


def mapped_tools(config):
    return {spec.get("tool") for spec in (config or {}).values() if isinstance(spec, dict)}


def values_from_arguments(config, tool_name, arguments):
    """{state_key: value} that the (possibly partial) arguments predict; absent arguments are left out."""
    if not isinstance(arguments, dict):
        return {}
    out = {}
    for key, argument in mappings(config, tool_name):
        if argument == "*":
            out[key] = arguments
        elif argument in arguments:
            out[key] = arguments[argument]
    return out


def _stable_prefix(text):
    """The text without a trailing number token, which may still be growing ("1" -> "12")."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
    if in_string:
        return text
    end = len(text)
    while end and text[end - 1] in _NUMBER_TAIL:
        end -= 1
    return text[:end]


def parse_partial(text):
    """The JSON value the text starts (incomplete strings kept, incomplete numbers held back), or None."""
    text = _stable_prefix(text or "")
    if not text.strip():
        return None
    try:
        return jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        return None


def grows(before, after):
    """True when `after` extends `before`: strings by suffix, objects by keys, arrays by items."""
    if isinstance(before, dict):
        return isinstance(after, dict) and all(k in after and grows(v, after[k]) for k, v in before.items())
    if isinstance(before, list):
        return (isinstance(after, list) and len(before) <= len(after)
                and all(grows(b, a) for b, a in zip(before, after, strict=False)))
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return before == after


class Prediction:
    """One streaming tool call. feed() returns {state_key: value} when there is something new to show."""

    def __init__(self, config, tool_name, interval=THROTTLE_SECONDS, clock=time.monotonic):
        self.config, self.tool_name = config, tool_name
        self.interval, self.clock = interval, clock
        self.text = ""
        self.values = None  # the last values handed out
        self._last_at = None

    @property
    def active(self):
        return bool(mappings(self.config, self.tool_name))

    def feed(self, chunk):
        self.text += chunk or ""
        if self._last_at is not None and self.clock() - self._last_at < self.interval:
            return None  # not due: do not even parse
        values = values_from_arguments(self.config, self.tool_name, parse_partial(self.text))
        if not values or values == self.values:
            return None
        if self.values is not None and not grows(self.values, values):
            return None  # never show a prediction that shrinks; the complete arguments settle it
        self.values, self._last_at = values, self.clock()
        return values

    def finish(self, text=None):
        """Values of the complete arguments (or the best partial reading), when they differ from the last shown."""
        text = self.text if text is None else text
        try:
            arguments = json.loads(text or "{}")
        except ValueError:  # not JSON, or beyond what json reads (an integer of 5,000 digits)
            arguments = parse_partial(text)
        values = values_from_arguments(self.config, self.tool_name, arguments)
        if not values or values == self.values:
            return None
        self.values = values
        return values


def pointer(key):
    """The JSON Pointer of a top-level state key (RFC 6901 escaping)."""
    return "/" + str(key).replace("~", "~0").replace("/", "~1")


def delta_ops(values, present):
    """RFC 6902 ops that put `values` at the top level: `add` for a key the document lacks, else `replace`."""
    return [
        {"op": "replace" if key in present else "add", "path": pointer(key), "value": value}
        for key, value in values.items()
    ]
