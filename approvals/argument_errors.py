"""What is wrong with a call's arguments, in sentences for the person reading them.

pydantic (our tools' models) and jsonschema (an MCP server's inputSchema) say it in English and
in their own terms ("String should match pattern '^\\d{6,20}$'", "'3' is not of type 'integer'"):
a reviewer who edits an argument would read a regular expression, in English. Neither library
translates its messages; pydantic's documented way is to map its error types to messages of one's
own (docs: "Customize error messages"), and jsonschema's errors name their keyword the same way.
So the common kinds get a sentence here (jsonschema's keywords in agui_project/schema_sentences.py,
which the shared state's check says its errors with too), marked for translation and said in the
active language; an unknown kind keeps the library's own message. Where the words go to a model, the caller
validates with the translation off (the model reads English).
"""

import re

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agui_project.json_schema import errors as schema_errors
from agui_project.schema_sentences import choices, form, jsonschema_sentence, number


def json_syntax(exc):
    """Where typed JSON (a json.JSONDecodeError) stops parsing, in the reader's language: json's own
    words ("Expecting ',' delimiter") are English and a parser's."""
    return _("not valid JSON near line %(line)s, column %(column)s: check its quotes, commas and brackets") % {
        "line": exc.lineno, "column": exc.colno}


def _pydantic_sentence(err, description):
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind == "missing":
        return _("This field is required.")
    if kind == "extra_forbidden":
        return _("This is not one of the tool's arguments.")
    if kind in ("string_type", "string_sub_type"):
        return _("Must be text.")
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return _("Must be a whole number.")
    if kind in ("float_type", "float_parsing", "decimal_type", "decimal_parsing"):
        return _("Must be a number.")
    if kind in ("bool_type", "bool_parsing"):
        return _("Must be true or false.")
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return _("Must be an object.")
    if kind in ("list_type", "tuple_type", "set_type"):
        return _("Must be a list.")
    if kind == "greater_than":
        return _("Must be greater than %(limit)s.") % {"limit": number(ctx.get("gt"))}
    if kind == "greater_than_equal":
        return _("Must be at least %(limit)s.") % {"limit": number(ctx.get("ge"))}
    if kind == "less_than":
        return _("Must be less than %(limit)s.") % {"limit": number(ctx.get("lt"))}
    if kind == "less_than_equal":
        return _("Must be at most %(limit)s.") % {"limit": number(ctx.get("le"))}
    if kind == "string_too_short":
        n = ctx.get("min_length", 1)
        return ngettext("Must be at least %(count)s character long.", "Must be at least %(count)s characters long.",
                        n) % {"count": n}
    if kind == "string_too_long":
        n = ctx.get("max_length", 0)
        return ngettext("Must be at most %(count)s character long.", "Must be at most %(count)s characters long.",
                        n) % {"count": n}
    if kind == "too_short":
        n = ctx.get("min_length", 1)
        return ngettext("Must have at least %(count)s item.", "Must have at least %(count)s items.", n) % {"count": n}
    if kind == "too_long":
        n = ctx.get("max_length", 0)
        return ngettext("Must have at most %(count)s item.", "Must have at most %(count)s items.", n) % {"count": n}
    if kind == "string_pattern_mismatch":
        return form(description)
    if kind in ("literal_error", "enum"):
        return _("Must be one of: %(choices)s.") % {"choices": choices(_expected(ctx.get("expected", "")))}
    if kind == "value_error" and ctx.get("error") is not None:
        return str(ctx["error"])  # the tool's own validator said it (in its words)
    if kind == "union_tag_invalid":  # a tagged union's tag (AG-UI: a message's role, a part's type)
        return _("Unknown %(key)s %(value)s; accepted: %(choices)s.") % {
            "key": _unquoted(ctx.get("discriminator")), "value": repr(ctx.get("tag")), "choices": ctx.get("expected_tags", "")}
    if kind == "union_tag_not_found":
        return _("Required: %(names)s.") % {"names": _unquoted(ctx.get("discriminator"))}
    return err.get("msg", "")


def _expected(text):
    """The values pydantic lists as one English phrase ("'USD', 'EUR' or 'GBP'", "1, 2 or 3"): its error
    has no list of them, and its "or" and quotes are not the reader's."""
    text = str(text or "")
    quoted = re.findall(r"'((?:[^'\\]|\\.)*)'", text)
    return quoted or [v for v in re.split(r", | or ", text) if v]


def _unquoted(text):
    return str(text or "").strip("'\"")


# what a value must be, said as one of several accepted kinds ("Must be one of: text, a list.")
_PYDANTIC_KINDS = {
    "string_type": lambda: _("text"), "int_type": lambda: _("a whole number"), "float_type": lambda: _("a number"),
    "bool_type": lambda: _("true or false"), "dict_type": lambda: _("an object"),
    "model_type": lambda: _("an object"), "model_attributes_type": lambda: _("an object"),
    "list_type": lambda: _("a list"), "none_required": lambda: _("empty (null)"),
}


def _on_the_wire(loc, data, kind):
    """(the path of `loc` in `data`, the positions in `loc` that are no place in it).

    pydantic's locations name a union's member where the value went into one: a tagged union's tag
    ("user" in messages.0.user.content) or a type ("str", "list[tagged-union[TextPart,...]]"). The
    client never wrote those: only what leads through its own JSON is its field's path. A missing
    field is not in the data; its name ends the location."""
    path, labels, node = [], [], data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and not isinstance(part, bool) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif i == len(loc) - 1 and kind == "missing" and isinstance(node, dict):
            path.append(part)
        else:
            labels.append(i)
    return path, labels


def _members_that_fit(found):
    """Of several members of a union that each refused the value, what the one that came furthest
    into it said: a list of parts refused for its third part is not also "Must be text."."""
    furthest = {}  # (union's location, member) -> how deep its errors went
    for err, path, labels in found:
        for i in labels:
            key = (tuple(err["loc"][:i]), err["loc"][i])
            furthest[key] = max(furthest.get(key, 0), len(path))
    best = {}
    for (union, _member), depth in furthest.items():
        best[union] = max(best.get(union, 0), depth)
    return [(err, path, labels) for err, path, labels in found
            if all(furthest[tuple(err["loc"][:i]), err["loc"][i]] >= best[tuple(err["loc"][:i])] for i in labels)]


def from_pydantic(exc, model=None, root="__root__", data=None):
    """{field path: [sentences]} of a pydantic ValidationError; `model`: the validated model (its
    fields' descriptions say what a field's form is); `root`: the key of what concerns the whole;
    `data`: what was validated, when given the paths are the places in it (pydantic's own
    locations name union members too: _on_the_wire)."""
    fields = getattr(model, "model_fields", {}) or {}
    found = []
    for err in exc.errors(include_url=False):
        loc = tuple(err.get("loc") or ())
        path, labels = _on_the_wire(loc, data, err.get("type")) if data is not None else (loc, [])
        found.append((err, path, labels))
    if data is not None:
        found = _members_that_fit(found)
    errors, kinds = {}, {}
    for err, path, labels in found:
        field = fields.get(path[0]) if len(path) == 1 else None
        key = ".".join(str(p) for p in path) or root
        sentence = _pydantic_sentence(err, getattr(field, "description", None))
        said = errors.setdefault(key, [])
        if sentence not in said:
            said.append(sentence)
        kinds.setdefault(key, []).append(err.get("type") if labels else None)
    for key, types in kinds.items():
        # the value fits none of a union's members, each refused it for its type: one sentence for all
        if len(types) > 1 and all(t in _PYDANTIC_KINDS for t in types):
            nouns = list(dict.fromkeys(_PYDANTIC_KINDS[t]() for t in types))
            errors[key] = [_("Must be one of: %(choices)s.") % {"choices": ", ".join(nouns)}]
    return errors


def _not_among(names):
    return _("Not among the tool's arguments: %(names)s.") % {"names": names}


def from_jsonschema(validator, instance, root="__root__", limit=None):
    """{field path: [sentences]} of what `validator` (a jsonschema validator) finds in `instance`;
    `root`: the key of what concerns the whole object; `limit`: at most that many errors read.
    SchemaError: the schema has a $ref that cannot be followed."""
    errors = {}
    found = schema_errors(validator, instance, limit)
    for err in sorted(found, key=lambda e: [str(p) for p in e.absolute_path]):
        said = errors.setdefault(".".join(str(p) for p in err.absolute_path) or root, [])
        sentence = jsonschema_sentence(err, _not_among)
        if sentence not in said:  # `required` reports each missing name; the sentence names them all
            said.append(sentence)
    return errors


# The largest whole number a double holds exactly. The pages (and most JSON readers) take a JSON
# number as a double: a larger one was shown to its reviewer as a neighbour of itself (and sent back
# as that neighbour by an edit), so a model could ask for 9007199254740993 where the page showed an
# id it trusts. I-JSON (RFC 7493, 2.2) asks for no more precision than a double's.
EXACT_LIMIT = 2**53 - 1


def inexact(arguments, root="__root__"):
    """{path: [sentence]} for each whole number in `arguments` past ±EXACT_LIMIT (empty when none)."""
    found, stack = {}, [(arguments, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > EXACT_LIMIT:
            found[path or root] = [_("A whole number this large (beyond %(limit)s either way) is not shown exactly "
                                     "where calls are reviewed: send it as text.") % {"limit": EXACT_LIMIT}]
    return found
