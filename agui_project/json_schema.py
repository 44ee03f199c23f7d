"""JSON Schemas written elsewhere, as validators that cannot hold a process.

An outside agent's `schema`, an MCP server's `inputSchema`, a model's `response_schema` for a
question: jsonschema runs `pattern` and `patternProperties` with Python's backtracking `re`, so one
such schema (`"pattern": "^(a+)+$"`) held a web process, GIL and all, for minutes on a 30-character
value, and `re` reads a pattern unlike JSON Schema's ECMA-262 (`$` took a trailing newline, `\\d`
full-width digits). Here they run on RE2 (linear time, `$` the end, `\\d` ASCII), as policy rules'
`matches` do (approvals/rules.py); a pattern RE2 cannot run (backreferences, lookaround) makes the
schema refused when checked. `additionalProperties` runs them too (the properties no pattern
names), so it is RE2's as well; `unevaluatedProperties` beside patterns is refused (jsonschema's code
for it calls `re` itself).

Their work is bounded too: jsonschema follows a `$ref` afresh at each use (a 1.5 KB chain of
`allOf: [{$ref: next}, {$ref: next}]` took 2^depth steps: 14 s at depth 19), compares `uniqueItems`
pairwise (22 s for 4,000 small objects) and scans an `enum` for each value. A check counts its steps
(each keyword applied, each value of an `enum` scanned, each item of a `uniqueItems` array, which is
hashed here, not compared pairwise) and stops past MAX_STEPS: TooCostly, a SchemaError, said to whoever
sent the schema or the value. A `$schema` inside a subschema is dropped from the copy validated with:
jsonschema took it to switch to its own validator class there, patterns on `re` and all.

A `$ref` is followed only inside the schema: jsonschema fetched any reference it could not resolve
(urllib, no timeout: `http://169.254.169.254/...`, `file:///...`) and read the answer as a schema, so
its words came back in our errors. A reference to another document is refused when the schema is
checked, and the validator gets an empty `referencing.Registry`, which retrieves nothing. One that
cannot be followed (a place that is not there; a loop) is the schema's fault too: SchemaError, not a 500.
"""

import copy
import functools
import json
import threading
from contextlib import contextmanager

import jsonschema
import re2
import referencing
import referencing.exceptions
from jsonschema import SchemaError, ValidationError

_NONE = object()
SKIPPED = frozenset({"const", "enum", "default", "examples"})  # values, not schemas: their keys are data
REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_NOTHING_RETRIEVED = referencing.Registry()  # no `retrieve`: a reference it does not hold is unresolvable
# steps one check of a value may take: a tool's arguments with a thousand objects of five keywords
# each take ~5,000; a step costs 1-11 µs (a $ref's the most), so one check holds a process < 0.6 s
MAX_STEPS = 50_000


class _Check(threading.local):
    left = None  # the steps left to the check running on this thread (budget())
    keys = None  # {id(an enum's list) or ("const", id(its schema)): the keys (_same), made once a check


_checking = _Check()


class TooCostly(SchemaError):
    """The check of a value against a schema took more than MAX_STEPS."""


@contextmanager
def budget():
    """MAX_STEPS for what runs inside (a check within one shares its steps)."""
    if _checking.left is not None:
        yield
        return
    _checking.left, _checking.keys = MAX_STEPS, {}
    try:
        yield
    finally:
        _checking.left = _checking.keys = None


def _spend(steps):
    if _checking.left is None:  # each use runs inside budget(): a new one that did not is a bug
        raise RuntimeError("a json_schema validator ran outside json_schema.errors(): its work is unbounded")
    _checking.left -= steps
    if _checking.left < 0:
        raise TooCostly(f"checking the value against the schema takes more than {MAX_STEPS} steps (its $refs, "
                        f"patterns, enums or uniqueItems, over the value's size)")


def _counted(check):
    def counted(validator, value, instance, schema):
        _spend(1)
        return check(validator, value, instance, schema)

    return counted


def _same(value):
    """`value` as a hashable key that two values share when JSON Schema calls them equal (1 and 1.0
    are; true and 1 are not; an object's keys in any order), a step spent for each of its values."""
    nodes = [0]

    def key(v):
        nodes[0] += 1
        if isinstance(v, bool) or v is None:
            return (type(v).__name__, v)
        if isinstance(v, (int, float)):
            return ("number", v)
        if isinstance(v, list):
            return ("array", tuple(key(x) for x in v))
        if isinstance(v, dict):
            return ("object", frozenset((k, key(x)) for k, x in v.items()))
        return (type(v).__name__, v)

    made = key(value)
    _spend(nodes[0])
    return made


def _size(value):
    """How many values `value` holds (itself included), a step spent for each."""
    count, stack = 0, [value]
    while stack:
        v = stack.pop()
        count += 1
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    _spend(count)
    return count


# RE2's memory for one pattern's program: compiling takes time as it grows (`[\pL\pN]{400}` took
# 0.2 s); a pattern past it is refused in a few ms. Typical patterns need a few KB.
PATTERN_MEMORY = 1 << 20
MAX_PATTERNS = 50  # distinct patterns in one schema: 1,700 in a 64 KB outside schema took 3.3 s to compile


def _options():
    options = re2.Options()
    options.log_errors = False  # a refused pattern is said to whoever wrote it, not logged to stderr
    options.max_mem = PATTERN_MEMORY
    return options


@functools.lru_cache(maxsize=4096)  # a schema's patterns all stay compiled (at most 64 KB of them)
def regex(pattern):
    """`pattern` compiled on RE2 (re2.error when RE2 cannot run it): schemas' patterns and policy
    rules' `matches` (approvals/rules.py)."""
    return re2.compile(pattern, _options())


def _search(pattern, text):
    try:
        return regex(pattern).search(text) is not None
    except re2.error as exc:  # checked when the schema was; a validator built without the check
        raise SchemaError(f"the pattern {pattern!r} cannot be run: {exc}") from exc


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    _spend(len(instance) * len(pattern_properties))  # a search per name and pattern
    for pattern, subschema in pattern_properties.items():
        for name, value in instance.items():
            if _search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator, additional, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    _spend(len(instance) * max(1, len(patterns)))
    extras = [name for name in instance if name not in known and not any(_search(p, name) for p in patterns)]
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif not additional and extras:
        yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, sorted(extras)))} "
                              f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def _unique_items(validator, unique, instance, schema):
    if not unique or not validator.is_type(instance, "array"):
        return
    seen = set()
    for item in instance:
        key = _same(item)
        if key in seen:
            yield ValidationError(f"{instance!r} has non-unique elements")  # jsonschema's words
            return
        seen.add(key)


def _keys(values):
    """The keys (_same) of a schema's enum list, or of its const in a list of one, made once a check:
    the schema's values live as long as it does."""
    keys = _checking.keys.get(id(values))
    if keys is None:
        keys = _checking.keys[id(values)] = frozenset(_same(v) for v in values)
    return keys


def _enum(validator, enums, instance, schema):
    if _same(instance) not in _keys(enums):
        yield ValidationError(f"{instance!r} is not one of {enums!r}")  # jsonschema's words


def _const(validator, const, instance, schema):
    known = _checking.keys.get(("const", id(schema)))
    if known is None:
        known = _checking.keys[("const", id(schema))] = _same(const)
    if _same(instance) != known:
        yield ValidationError(f"{const!r} was expected")  # jsonschema's words


@functools.cache
def _ours(cls):
    keywords = {**cls.VALIDATORS, "pattern": _pattern, "patternProperties": _pattern_properties,
                "additionalProperties": _additional_properties, "uniqueItems": _unique_items}
    if "enum" in keywords:
        keywords["enum"] = _enum  # compared by hashed keys, not each value with each (jsonschema's)
    if "const" in keywords:
        keywords["const"] = _const
    return jsonschema.validators.extend(cls, {k: _counted(check) for k, check in keywords.items()})


def _one_dialect(schema, top=True):
    """`schema` without the `$schema` of its subschemas (a copy where it had any)."""
    if isinstance(schema, list):
        return [_one_dialect(v, False) for v in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: (v if k in SKIPPED else _one_dialect(v, False)) for k, v in schema.items()
            if top or k != "$schema"}


def _walk(schema):
    """Every schema node of `schema` (dicts), values of const/enum/default/examples left out."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            yield node
            stack.extend(v for k, v in node.items() if k not in SKIPPED)


def _patterns(schema):
    """Every pattern the schema holds (as `pattern` or a `patternProperties` key)."""
    for node in _walk(schema):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            yield from (k for k in node["patternProperties"] if isinstance(k, str))


def _foreign_reference(schema):
    """The first reference that points outside the schema itself, or None."""
    for node in _walk(schema):
        for key in REFERENCES:
            if isinstance(node.get(key), str) and not node[key].startswith("#"):
                return node[key]
    return None


def validator(schema, default=jsonschema.Draft202012Validator, max_bytes=None):
    """A validator of `schema` whose patterns run on RE2; SchemaError when `schema` is no JSON Schema,
    holds a pattern RE2 cannot run or a reference it cannot follow, or is longer than `max_bytes`."""
    if max_bytes is not None and len(json.dumps(schema)) > max_bytes:
        raise SchemaError(f"the schema is larger than {max_bytes} bytes")
    # counted before jsonschema's own check compiles each one again (its "regex" format, on `re`)
    if len(set(_patterns(schema))) > MAX_PATTERNS:
        raise SchemaError(f"the schema holds more than {MAX_PATTERNS} different patterns")
    cls = jsonschema.validators.validator_for(schema, default=default)
    cls.check_schema(schema)
    foreign = _foreign_reference(schema)
    if foreign is not None:
        raise SchemaError(f"the schema refers to {foreign[:200]!r}: only references inside the schema (#...) "
                          f"are followed")
    patterns = list(_patterns(schema))
    for pattern in patterns:
        try:
            regex(pattern)
        except re2.error as exc:
            raise SchemaError(f"the pattern {pattern[:200]!r} is not one this server runs (RE2 syntax: no "
                              f"backreferences or lookaround; at most {PATTERN_MEMORY >> 20} MB compiled)") from exc
    if patterns and any("unevaluatedProperties" in node for node in _walk(schema)):
        raise SchemaError("patternProperties or pattern beside unevaluatedProperties is not supported here")
    if any("$schema" in node for node in _walk(schema) if node is not schema):
        schema = _one_dialect(schema)
    checked = _ours(cls)(schema, registry=_NOTHING_RETRIEVED)
    errors(checked, None)  # a schema that loops on itself loops on any value: refused now
    return checked


def errors(validator_, instance, limit=None):
    """The first `limit` (all: None) of validator_.iter_errors(instance), within MAX_STEPS (TooCostly
    past them), with a `$ref` that cannot be followed said as SchemaError."""
    try:
        with budget():
            found = []
            for error in validator_.iter_errors(instance):
                found.append(error)
                if limit is not None and len(found) >= limit:
                    break
            return found
    except referencing.exceptions.Unresolvable as exc:
        raise SchemaError(f"a $ref of the schema cannot be followed: {str(exc)[:200]}") from exc
    except RecursionError as exc:
        raise SchemaError("the schema refers to itself without end (its $refs loop)") from exc


def _local(root, node):
    """`node` with its local `$ref` (`#/$defs/x`, `#/definitions/x`) followed; {} when it leads nowhere."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/") and seen < 32:
        target = root
        for part in node["$ref"][2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        node, seen = target, seen + 1
    return node if isinstance(node, dict) else {}


def with_defaults(validator_, instance):
    """`instance` with the `default` of each property it leaves out (its own schema's, where the default
    is valid there), in objects at any depth the schema's `properties` describe.

    A server applies its schema's defaults to what is left out: policy rules and reviewers must read
    the value that will be used (`"dryRun": false` left out made a rule `dryRun eq false -> gate` miss
    a call that wrote for real). Validate `instance` first; this adds only what the schema allows."""
    root = validator_.schema
    valid = {}  # id(a property's schema) -> whether its default is valid there: asked once, not per item

    def fill(schema, value):
        schema = _local(root, schema)
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            value = dict(value)
            for name, sub in schema["properties"].items():
                if name in value:
                    value[name] = fill(sub, value[name])
                    continue
                # a `default` beside a `$ref` is the property's own; else the one its $ref leads to
                default = sub.get("default", _NONE) if isinstance(sub, dict) else _NONE
                if default is _NONE:
                    default = _local(root, sub).get("default", _NONE)
                if default is _NONE:
                    continue
                if id(sub) not in valid:
                    valid[id(sub)] = not errors(validator_.evolve(schema=sub), default, limit=1)
                if valid[id(sub)]:
                    _size(default)  # each copy counted: a big default in each of many items was 12 MB
                    value[name] = fill(sub, copy.deepcopy(default))
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            value = [fill(schema["items"], item) for item in value]
        return value

    with budget():  # the whole filling, its checks of defaults included, within one check's steps
        return fill(root, instance)
