r"""Policy conditions as data: a small rule language over validated arguments and context.

A policy's `conditions` is a list of rules, tried in order; the first that matches decides:

    [{"name": "system files", "when": {"path": "args.path", "op": "glob", "value": "/etc/*"}, "action": "deny"},
     {"name": "large or foreign", "when": {"any": [
         {"path": "args.amount", "op": "gt", "value": 1000},
         {"path": "args.currency", "op": "ne", "value": "USD"}]}, "action": "gate"},
     {"name": "otherwise", "action": "allow"}]

- action: gate (a person decides) | deny (blocked, the model is told) | allow (runs at once)
- route (gate rules only, optional): who decides the calls this rule gates and how, over the
  policy's own settings: {"group": "treasury", "approvals": 2, "risk": "critical", "deadline": "15 min"}
  (any subset; deadline in seconds or "<n> s|min|h|d"). The group must exist when the rule is saved
  (policy_errors checks, this module does not touch the database).
- when: a condition; omitted means "always" (a catch-all last rule)
- condition: {"all": [...]} | {"any": [...]} | {"not": cond} | {"path", "op", "value"}
- path: dotted, rooted at `args` (the validated arguments; digits index lists), `user`
  (username, groups, is_staff), `agent`, `thread` or `tool`
- op: eq ne gt gte lt lte in not_in contains matches (regex, searched with RE2) glob (fnmatch)

`matches` runs on RE2 (google-re2), a linear-time engine: Python's backtracking `re` let one
saved pattern such as `^(\w+\s?)*$` hold a worker for minutes on a 30-character argument (and
the GIL with it, so the run's lease lapsed). Patterns RE2 cannot run (backreferences,
lookaround) are refused when saved.

A leaf whose path is absent does not match. An argument of a kind the leaf does not
compare (text, a list or an object where it compares a number; a number where it matches text)
cannot be judged, and the call is refused (`Unjudgeable`): a tool that reads "5000" as 5000 would
otherwise run what a `deny when amount gt 1000` exists to stop. Bad rules are refused when saved
(`validate`), never at run time.
"""

import fnmatch
import itertools
import math
import re
import sys
from dataclasses import dataclass

import re2
from django.utils.translation import gettext as _

from agui_project.json_schema import regex

ACTIONS = ("gate", "deny", "allow")
OPS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in", "contains", "matches", "glob")
ROOTS = ("args", "user", "agent", "thread", "tool")
USER_FIELDS = ("username", "groups", "is_staff", "is_superuser", "id")
MAX_DEPTH = 8
MAX_RULES = 50
MAX_LEAVES = 500  # conditions (path/op/value) in one policy: each is judged on every call of its tool
MAX_LIST = 500
MAX_PATTERN = 500  # characters of a `matches` or `glob` pattern
_MISSING = object()


class RuleError(Exception):
    """Malformed conditions: `errors` lists "where: what is wrong" messages."""

    def __init__(self, errors):
        super().__init__("; ".join(errors))
        self.errors = errors


ROUTE_KEYS = ("group", "approvals", "risk", "deadline")
RISKS = ("low", "medium", "high", "critical")  # approvals.choices.Risk (this module imports no models)
MAX_DEADLINE = 30 * 24 * 3600
_UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60, "minute": 60,
          "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400}
_DEADLINE = re.compile(r"^\s*(\d{1,7})\s*([a-z]+)\s*$")


def deadline_seconds(value):
    """A route's deadline in seconds (an int, or "15 min", "2 h" ...); None when it cannot be read."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str):
        m = _DEADLINE.match(value.lower())
        if not m or m.group(2) not in _UNITS:
            return None
        seconds = int(m.group(1)) * _UNITS[m.group(2)]
    else:
        return None
    return seconds if 1 <= seconds <= MAX_DEADLINE else None


def route_text(route):
    """A route in words, for the simulator and the request page: "treasury, 2 approvals, critical risk,
    15 min to decide"."""
    if not route:
        return ""
    parts = []
    if route.get("group"):
        parts.append(route["group"])
    if route.get("approvals"):
        parts.append(f"{route['approvals']} approval{'s' if route['approvals'] != 1 else ''}")
    if route.get("risk"):
        parts.append(f"{route['risk']} risk")
    if route.get("deadline") is not None:
        seconds = deadline_seconds(route["deadline"]) or 0
        for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
            if seconds >= size and seconds % size == 0:
                parts.append(f"{seconds // size} {unit} to decide")
                break
        else:
            parts.append(f"{seconds} s to decide")
    return ", ".join(parts)


def _check_route(route, where, errors, action):
    if action != "gate":
        errors.append(_("%(where)s: only a gate rule routes (a person decides); remove 'route' or use action gate")
                      % {"where": where})
        return
    if not isinstance(route, dict) or not route:
        errors.append(_("%(where)s: route is an object with any of %(keys)s") % {"where": where, "keys": ", ".join(ROUTE_KEYS)})
        return
    unknown = set(route) - set(ROUTE_KEYS)
    if unknown:
        errors.append(_("%(where)s: unknown key(s) %(unknown)s; use %(keys)s")
                      % {"where": where, "unknown": ", ".join(sorted(unknown)), "keys": ", ".join(ROUTE_KEYS)})
    if "group" in route and (not isinstance(route["group"], str) or not route["group"].strip()
                             or len(route["group"]) > 150):
        errors.append(_("%(where)s.group: the name of an approver group") % {"where": where})
    if "approvals" in route:
        n = route["approvals"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            errors.append(_("%(where)s.approvals: at least 1") % {"where": where})
        elif n > 20:
            errors.append(_("%(where)s.approvals: at most 20") % {"where": where})
    if "risk" in route and route["risk"] not in RISKS:
        errors.append(_("%(where)s.risk: must be one of %(values)s") % {"where": where, "values": ", ".join(RISKS)})
    if "deadline" in route and deadline_seconds(route["deadline"]) is None:
        errors.append(_("%(where)s.deadline: a number of seconds from 1 to %(max)s, or e.g. \"15 min\", \"2 h\", "
                        "\"1 d\"") % {"where": where, "max": MAX_DEADLINE})


@dataclass(frozen=True)
class Match:
    index: int
    name: str
    action: str
    route: dict | None = None

    @property
    def label(self):
        return f"rule {self.index + 1} ({self.name}): {self.action}"


# --- validation (when saved) ------------------------------------------------------------------


def _is_number(v):
    # any int (Python compares it exactly with a float), or a finite float; math.isfinite(10**400)
    # raises OverflowError, which made saving a rule with that value a 500
    return isinstance(v, int | float) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))


def _beyond_double(value):
    """Whether `value` holds a number no double holds (10**400, inf, NaN): JSON has no such number
    (agui_project/jsoncheck.py refuses 1e999 wherever JSON enters)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and abs(node) > sys.float_info.max:
            return True
        if isinstance(node, float) and not math.isfinite(node):
            return True
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
    return False


def _schema_at(schema, segments):
    """Follow dotted segments through a JSON schema; None when the path cannot exist.

    Returns the sub-schema, or {} when the schema stops saying (free-form objects, unions).
    """
    defs = schema.get("$defs", {})
    node = schema
    for seg in segments:
        while isinstance(node, dict) and "$ref" in node:  # pydantic puts nested models in $defs
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        if not isinstance(node, dict):
            return {}
        if "properties" in node:
            if seg not in node["properties"]:
                return None
            node = node["properties"][seg]
        elif node.get("type") == "array" and seg.isdigit():
            node = node.get("items", {})
        else:
            return {}
    return node


def _check_path(path, where, errors, schema):
    if not isinstance(path, str) or not path.strip():
        errors.append(_("%(where)s: 'path' must be a non-empty dotted string such as \"args.amount\"")
                      % {"where": where})
        return
    segments = path.split(".")
    if any(not s for s in segments):
        errors.append(_("%(where)s: path %(path)r has an empty segment") % {"where": where, "path": path})
        return
    root = segments[0]
    if root not in ROOTS:
        errors.append(_("%(where)s: path %(path)r must start with one of %(roots)s")
                      % {"where": where, "path": path, "roots": ", ".join(ROOTS)})
    elif root in ("agent", "thread", "tool") and len(segments) > 1:
        errors.append(_("%(where)s: %(root)r is a plain value; use the path %(root)r") % {"where": where, "root": root})
    elif root == "user" and (len(segments) != 2 or segments[1] not in USER_FIELDS):
        errors.append(_("%(where)s: path %(path)r: the user offers %(fields)s")
                      % {"where": where, "path": path, "fields": ", ".join("user." + f for f in USER_FIELDS)})
    elif root == "args":
        if len(segments) == 1:
            errors.append(_("%(where)s: name an argument, e.g. \"args.amount\"") % {"where": where})
        elif schema and _schema_at(schema, segments[1:]) is None:
            known = ", ".join(sorted(schema.get("properties", {}))) or "—"
            errors.append(_("%(where)s: the tool has no argument %(name)r (arguments: %(known)s)")
                          % {"where": where, "name": ".".join(segments[1:]), "known": known})


_JSON_TYPES = {  # a JSON Schema type -> whether a rule's value is one (the order of _same and _ordered)
    "string": lambda v: isinstance(v, str), "number": _is_number, "integer": _is_number,
    "boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict),
}


def _declared(schema, path):
    """(the JSON types the argument at `path` may have, its enum) as the tool's schema says them;
    (None, None) when it does not say plainly (no schema, a union, a free-form value)."""
    segments = path.split(".") if isinstance(path, str) else []
    if not schema or len(segments) < 2 or segments[0] != "args":
        return None, None
    node = _schema_at(schema, segments[1:])
    if not isinstance(node, dict):
        return None, None
    kind = node.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None
    if not kinds or not all(k in _JSON_TYPES for k in kinds):
        return None, None
    enum = node.get("enum") if isinstance(node.get("enum"), list) else None
    return kinds, enum


def _json_kind(value):
    """A value's kind by JSON's names ("array", not Python's "list")."""
    return next((k for k in ("boolean", "null", "string", "array", "object") if _JSON_TYPES[k](value)), "number")


def _check_comparable(op, value, kinds, enum, where, errors):
    """A value the argument can never be compared with makes a rule that never matches (a deny that
    blocks nothing, a `ne` allow that allows everything): refused when the tool's schema says the type."""
    def fits(v):
        return any(_JSON_TYPES[k](v) for k in kinds) and (enum is None or any(_same(v, e) for e in enum))

    types = " | ".join(kinds)  # JSON Schema's type names, as the tool's schema writes them
    said = types if enum is None else _("%(types)s (one of %(values)s)") % {
        "types": types, "values": ", ".join(map(repr, enum))}
    if op in ("eq", "ne"):
        if not fits(value):
            errors.append(_("%(where)s: the argument is %(said)s, so it never equals %(value)s")
                          % {"where": where, "said": said, "value": repr(value)})
    elif op in ("in", "not_in") and isinstance(value, list):
        wrong = [v for v in value if not fits(v)]
        if wrong:
            errors.append(_("%(where)s: the argument is %(said)s, so it never equals %(value)s")
                          % {"where": where, "said": said, "value": ", ".join(map(repr, wrong))})
    elif op in ("gt", "gte", "lt", "lte"):
        if not any(k in ("number", "integer", "string") and _JSON_TYPES[k](value) for k in kinds):
            errors.append(_("%(where)s: the argument is %(types)s, so %(op)s %(value)r never compares "
                            "(a number limit for a number, text for text)")
                          % {"where": where, "types": types, "op": op, "value": value})
    elif op in ("matches", "glob"):
        if "string" not in kinds:
            errors.append(_("%(where)s: the argument is %(types)s, not text: %(op)s never matches it")
                          % {"where": where, "types": types, "op": op})


# the server's facts as scope_for gives them (JSON's names): a value a fact can never meet makes a rule
# that never matches (`user.groups eq "frozen"`: the groups are a list, and a deny on it blocks nobody)
FACT_KINDS = {"user.username": "string", "user.groups": "array", "user.is_staff": "boolean",
              "user.is_superuser": "boolean", "user.id": "integer", "agent": "string", "thread": "string",
              "tool": "string"}


def _fact_holds_sometimes(kind, op, value):
    """Whether a leaf on a fact of `kind` can ever hold (the way _leaf compares)."""
    def fits(v):
        return _json_kind(v) == ("number" if kind == "integer" else kind) and (kind != "array" or all(
            isinstance(item, str) for item in v))

    if op in ("eq", "ne"):
        return fits(value)
    if op in ("in", "not_in"):
        return isinstance(value, list) and all(fits(v) for v in value)
    if op in ("gt", "gte", "lt", "lte"):
        return kind in ("string", "integer") and fits(value)
    if op == "contains":
        return kind in ("string", "array") and isinstance(value, str)
    return kind == "string"  # matches, glob


def _check_fact(path, op, value, where, errors):
    kind = FACT_KINDS.get(path)
    if kind and not _fact_holds_sometimes(kind, op, value):
        errors.append(_("%(where)s: %(path)s is %(kind)s, so %(op)s %(value)s never holds for it")
                      % {"where": where, "path": path, "kind": kind, "op": op, "value": repr(value)})


def leaf_conditions(conditions):
    """(rule index, leaf) of each path/op/value condition of the rules, through all / any / not (as
    deep as they go: saved rules were validated to MAX_DEPTH)."""
    for index, rule in enumerate(conditions or []):
        stack = [rule.get("when")] if isinstance(rule, dict) else []
        while stack:
            cond = stack.pop()
            if isinstance(cond, list):
                stack.extend(cond)
            elif isinstance(cond, dict):
                if "path" in cond:
                    yield index, cond
                stack.extend(cond[k] for k in ("all", "any", "not") if k in cond)


def groups_tested(conditions):
    """[(rule index, group name)] of the groups the rules' conditions test by name (`user.groups
    contains "frozen"`, or the names of an `eq` list): renamed, such a rule would test a name nobody
    has any more, silently (access.named_by, validators)."""
    found = []
    for index, leaf in leaf_conditions(conditions):
        if leaf.get("path") == "user.groups":
            value = leaf.get("value")
            names = [value] if leaf.get("op") == "contains" else value if leaf.get("op") in ("eq", "ne") else []
            if isinstance(names, list):
                found.extend((index, n) for n in names if isinstance(n, str))
    return found


def usernames_tested(conditions):
    """[(rule index, username)] of the accounts the rules' conditions name exactly (`user.username eq
    "bob"`, or in a list): a typo would match nobody, and a rename would leave a deny on a name nobody has
    (validators, access.named_by_account)."""
    found = []
    for index, leaf in leaf_conditions(conditions):
        if leaf.get("path") == "user.username" and leaf.get("op") in ("eq", "ne", "in", "not_in"):
            value = leaf.get("value")
            found.extend((index, n) for n in (value if isinstance(value, list) else [value]) if isinstance(n, str))
    return found


def _check_leaf(cond, where, errors, schema):
    found = len(errors)
    unknown = set(cond) - {"path", "op", "value"}
    if unknown:
        errors.append(_("%(where)s: unknown key(s) %(unknown)s") % {"where": where, "unknown": ", ".join(sorted(unknown))})
    for key in ("path", "op", "value"):
        if key not in cond:
            errors.append(_("%(where)s: missing %(key)r") % {"where": where, "key": key})
    _check_path(cond.get("path"), where, errors, schema)
    op, value = cond.get("op"), cond.get("value")
    if "op" in cond and op not in OPS:
        errors.append(_("%(where)s: unknown operator %(op)r (use one of %(ops)s)")
                      % {"where": where, "op": op, "ops": ", ".join(OPS)})
        return
    if "value" not in cond:
        return
    if _beyond_double(value):
        errors.append(_("%(where)s: the value holds a number too large for a rule (at most about 1.8e308)")
                      % {"where": where})
        return
    if op in ("gt", "gte", "lt", "lte") and not (_is_number(value) or isinstance(value, str)):
        errors.append(_("%(where)s: %(op)s needs a number or a string, not %(kind)s")
                      % {"where": where, "op": op, "kind": _json_kind(value)})
    elif op in ("in", "not_in"):
        if not isinstance(value, list):
            errors.append(_("%(where)s: %(op)s needs a list of values") % {"where": where, "op": op})
        elif len(value) > MAX_LIST:
            errors.append(_("%(where)s: %(op)s lists at most %(max)s values") % {"where": where, "op": op, "max": MAX_LIST})
    elif op in ("matches", "glob"):
        if not isinstance(value, str) or not value:
            errors.append(_("%(where)s: %(op)s needs a non-empty string pattern") % {"where": where, "op": op})
        elif len(value) > MAX_PATTERN:
            errors.append(_("%(where)s: a pattern is at most %(max)s characters") % {"where": where, "max": MAX_PATTERN})
        elif op == "matches":
            try:
                regex(value)
            except re2.error as exc:
                errors.append(_("%(where)s: %(pattern)r is not a regular expression this engine runs (RE2 syntax: "
                                "no backreferences or lookaround): %(problem)s")
                              % {"where": where, "pattern": value, "problem": _re2_message(exc)})
    if len(errors) == found:  # a well-formed leaf: can its value ever meet the argument's, or the fact's?
        kinds, enum = _declared(schema, cond.get("path"))
        if kinds:
            _check_comparable(op, value, kinds, enum, where, errors)
        else:
            _check_fact(cond.get("path"), op, value, where, errors)


def _check_condition(cond, where, errors, schema, depth):
    if depth > MAX_DEPTH:
        errors.append(_("%(where)s: conditions nest at most %(max)s deep") % {"where": where, "max": MAX_DEPTH})
        return
    if not isinstance(cond, dict):
        errors.append(_("%(where)s: a condition is an object with all, any, not, or path/op/value") % {"where": where})
        return
    combinators = [k for k in ("all", "any", "not") if k in cond]
    if len(combinators) > 1 or (combinators and len(cond) != 1):
        errors.append(_("%(where)s: use exactly one of all / any / not per object (found %(found)s)")
                      % {"where": where, "found": ", ".join(sorted(cond))})
        return
    if not combinators:
        _check_leaf(cond, where, errors, schema)
        return
    key = combinators[0]
    if key == "not":
        _check_condition(cond["not"], f"{where}.not", errors, schema, depth + 1)
        return
    items = cond[key]
    if not isinstance(items, list):
        errors.append(_("%(where)s: %(key)r takes a list of conditions") % {"where": where, "key": key})
        return
    for i, sub in enumerate(items):
        _check_condition(sub, f"{where}.{key}[{i}]", errors, schema, depth + 1)


def validate(conditions, schema=None):
    """Return the conditions normalised, or raise RuleError listing every problem.

    `schema` (the tool's JSON schema, when known) lets a misspelled argument be refused.
    """
    if conditions in (None, ""):
        return []
    if not isinstance(conditions, list):
        raise RuleError([_("conditions must be a list of rules")])
    if len(conditions) > MAX_RULES:
        raise RuleError([_("at most %(max)s rules") % {"max": MAX_RULES}])
    # ~5,000 `matches` leaves held every call of the tool 0.4 s (counted no further than past the limit)
    if sum(1 for _ in itertools.islice(leaf_conditions(conditions), MAX_LEAVES + 1)) > MAX_LEAVES:
        raise RuleError([_("at most %(max)s conditions in all the rules") % {"max": MAX_LEAVES}])
    errors = []
    out = []
    for i, rule in enumerate(conditions):
        # "rule 2" in the reader's words; what follows it (".when.any[0]") is the rule's own JSON keys
        where = _("rule %(number)s") % {"number": i + 1}
        if not isinstance(rule, dict):
            errors.append(_("%(where)s: a rule is an object with name, when and action") % {"where": where})
            continue
        unknown = set(rule) - {"name", "when", "action", "route"}
        if unknown:
            errors.append(_("%(where)s: unknown key(s) %(unknown)s") % {"where": where, "unknown": ", ".join(sorted(unknown))})
        if rule.get("action") not in ACTIONS:
            errors.append(_("%(where)s: action must be one of %(actions)s (got %(got)r)")
                          % {"where": where, "actions": ", ".join(ACTIONS), "got": rule.get("action")})
        name = rule.get("name", "")
        if not isinstance(name, str) or len(name) > 100:
            errors.append(_("%(where)s: name must be a string of at most 100 characters") % {"where": where})
        if "when" in rule:
            _check_condition(rule["when"], f"{where}.when", errors, schema or {}, 1)
        elif i != len(conditions) - 1:
            errors.append(_("%(where)s: a rule without 'when' always matches, so only the last rule may omit it")
                          % {"where": where})
        if "route" in rule:
            _check_route(rule["route"], f"{where}.route", errors, rule.get("action"))
        out.append({k: rule[k] for k in ("name", "when", "action", "route") if k in rule})
    if errors:
        raise RuleError(errors)
    return out


# --- evaluation (at run time, over validated arguments) ----------------------------------------


def _re2_message(exc):
    arg = exc.args[0] if exc.args else exc
    return arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)


class RuleBroken(Exception):
    """A stored rule that cannot be evaluated (saved before today's checks): a person decides."""


class Unjudgeable(Exception):
    """An argument of a kind a rule does not compare. Only the arguments' kinds are the caller's to
    choose (an outside agent sends its own schema, and a tool's schema may leave a type open); the
    user's, agent's, thread's and tool's facts are the server's. `label`: matched_rule's words."""

    def __init__(self, path, wanted, got, index=None, name=""):
        super().__init__(path, wanted, got)
        self.path, self.wanted, self.got, self.index, self.name = path, wanted, got, index, name

    @property
    def label(self):
        return (f"rule {self.index + 1} ({self.name}): cannot judge {self.path} "
                f"({self.got} where it compares {' or '.join(self.wanted)})")


def _resolve(path, scope):
    node = scope
    for seg in path.split("."):
        if isinstance(node, dict):
            node = node.get(seg, _MISSING)
        elif isinstance(node, list) and seg.isdigit():
            idx = int(seg)
            node = node[idx] if idx < len(node) else _MISSING
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _same(a, b):
    # True == 1 in Python; a rule saying `eq true` must not match the number 1
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _ordered(actual, expected):
    if _is_number(actual) and _is_number(expected):
        return True
    return isinstance(actual, str) and isinstance(expected, str)


def _compared(op, expected):
    """The JSON kinds of argument a leaf compares (empty: any)."""
    if op in ("eq", "ne"):
        return [] if expected is None else [_json_kind(expected)]
    if op in ("in", "not_in"):
        return sorted({_json_kind(v) for v in expected if v is not None})
    if op in ("gt", "gte", "lt", "lte"):
        return [_json_kind(expected)]
    if op == "contains":
        return ["array", "object", "string"]
    return ["string"]  # matches, glob


def _leaf(cond, scope):
    actual = _resolve(cond["path"], scope)
    if actual is _MISSING:
        return False
    op, expected = cond["op"], cond["value"]
    if actual is not None and cond["path"].startswith("args."):  # null: no value of any kind (eq null matches it)
        wanted = _compared(op, expected)
        if wanted and _json_kind(actual) not in wanted:
            raise Unjudgeable(cond["path"], wanted, _json_kind(actual))
    if op == "eq":
        return _same(actual, expected)
    if op == "ne":
        return not _same(actual, expected)
    if op in ("gt", "gte", "lt", "lte"):
        if not _ordered(actual, expected):
            return False
        return {"gt": actual > expected, "gte": actual >= expected,
                "lt": actual < expected, "lte": actual <= expected}[op]
    if op == "in":
        return any(_same(actual, v) for v in expected)
    if op == "not_in":
        return not any(_same(actual, v) for v in expected)
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(expected, str) and expected in actual
        if isinstance(actual, list):
            return any(_same(item, expected) for item in actual)
        if isinstance(actual, dict):
            return isinstance(expected, str) and expected in actual
        return False
    if not isinstance(actual, str):
        return False
    if op == "matches":
        try:
            return regex(expected).search(actual) is not None
        except re2.error as exc:
            raise RuleBroken(f"the pattern {expected!r} cannot be run: {_re2_message(exc)}") from exc
    return fnmatch.fnmatchcase(actual, expected)  # glob


def holds(cond, scope):
    if "all" in cond:
        return all(holds(c, scope) for c in cond["all"])
    if "any" in cond:
        return any(holds(c, scope) for c in cond["any"])
    if "not" in cond:
        return not holds(cond["not"], scope)
    return _leaf(cond, scope)


def scope_for(tool_name, arguments, context=None):
    """What rules can see: the validated arguments and plain facts about the caller."""
    context = context or {}
    user = context.get("user")
    user_facts = {}
    if user is not None and getattr(user, "is_authenticated", False):
        user_facts = {
            "id": user.pk,
            "username": user.get_username(),
            "groups": sorted(user.groups.values_list("name", flat=True)),
            "is_staff": bool(user.is_staff),
            "is_superuser": bool(user.is_superuser),
        }
    return {"args": arguments or {}, "user": user_facts, "agent": context.get("agent") or "",
            "thread": context.get("thread") or "", "tool": tool_name}


def first_match(conditions, scope):
    """The first rule whose condition holds, or None. Unjudgeable names the rule that could not judge."""
    for i, rule in enumerate(conditions or []):
        name = rule.get("name") or f"rule {i + 1}"
        try:
            hit = "when" not in rule or holds(rule["when"], scope)
        except Unjudgeable as exc:
            raise Unjudgeable(exc.path, exc.wanted, exc.got, i, name) from None
        if hit:
            return Match(i, name, rule["action"], rule.get("route") or None)
    return None
