"""JSON Schemas written elsewhere, as validators that cannot hold a process.

An outside agent's `schema`, an MCP server's `inputSchema`, a model's `response_schema` for a
question: jsonschema runs `pattern` and `patternProperties` with Python's backtracking `re`, so one
such schema (`"pattern": "^(a+)+$"`) held a web process, GIL and all, for minutes on a 30-character
value, and `re` reads a pattern unlike JSON Schema's ECMA-262 (`$` took a trailing newline, `\\d`
full-width digits). Here they run on RE2 (linear time, `$` the end, `\\d` ASCII), as policy rules'
`matches` do (approvals/rules.py); a pattern RE2 cannot run (backreferences, lookaround) makes the
schema refused when checked. A `$ref` that cannot be followed (another document: nothing is
fetched; a place that is not there; a loop) is the schema's fault too: SchemaError, not a 500.
"""

import functools

import jsonschema
import re2
import referencing.exceptions
from jsonschema import SchemaError, ValidationError

SKIPPED = frozenset({"const", "enum", "default", "examples"})  # values, not schemas: their keys are data


def _options():
    options = re2.Options()
    options.log_errors = False
    return options


@functools.lru_cache(maxsize=512)
def _compiled(pattern):
    return re2.compile(pattern, _options())


def _search(pattern, text):
    try:
        return _compiled(pattern).search(text) is not None
    except re2.error as exc:  # checked when the schema was; a validator built without the check
        raise SchemaError(f"the pattern {pattern!r} cannot be run: {exc}") from exc


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for name, value in instance.items():
            if _search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


@functools.cache
def _ours(cls):
    return jsonschema.validators.extend(cls, {"pattern": _pattern, "patternProperties": _pattern_properties})


def _patterns(schema):
    """Every pattern the schema holds (as `pattern` or a `patternProperties` key)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                yield node["pattern"]
            if isinstance(node.get("patternProperties"), dict):
                yield from (k for k in node["patternProperties"] if isinstance(k, str))
            stack.extend(v for k, v in node.items() if k not in SKIPPED)


def validator(schema, default=jsonschema.Draft202012Validator):
    """A validator of `schema` whose patterns run on RE2; SchemaError when `schema` is no JSON Schema
    or holds a pattern RE2 cannot run."""
    cls = jsonschema.validators.validator_for(schema, default=default)
    cls.check_schema(schema)
    for pattern in _patterns(schema):
        try:
            _compiled(pattern)
        except re2.error as exc:
            raise SchemaError(f"the pattern {pattern!r} is not one this server runs (no backreferences or "
                              f"lookaround): {exc}") from exc
    return _ours(cls)(schema)


def iter_errors(validator_, instance):
    """validator_.iter_errors(instance), with a `$ref` that cannot be followed said as SchemaError."""
    try:
        yield from validator_.iter_errors(instance)
    except referencing.exceptions.Unresolvable as exc:
        raise SchemaError(f"a $ref of the schema cannot be followed: {str(exc)[:200]}") from exc
    except RecursionError as exc:
        raise SchemaError("the schema's $refs loop without end") from exc
