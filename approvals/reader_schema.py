"""A registered tool's arguments editor in the reader's language: the labels its author gave as
msgids (ToolDefaults.labels: pydantic Field titles, gettext_noop) and its schema's descriptions said
through the catalogue (the same English text is the model's). An outside agent's schema, and an MCP
server's, is shown as given: its words are its own, and labels it chose could call a field something
it is not, so none are taken from it."""

import copy
import json

from django.utils.translation import gettext, ngettext

from . import registry


def _own(tool_name):
    defaults = registry.get(tool_name)
    return defaults if defaults is not None and defaults.labels else None


def labels(tool_name) -> dict:
    """{argument path ("steps.*.status"): label}, for static/js/schema-editor.js."""
    defaults = _own(tool_name)
    return {path: gettext(msgid) for path, msgid in defaults.labels.items()} if defaults else {}


def described(tool_name, schema):
    """The schema with each description said in the reader's language (our own tools' only)."""
    if not schema or _own(tool_name) is None:
        return schema
    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("description"), str) and node["description"]:
                node["description"] = gettext(node["description"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def changes(tool_name, before, after, most=3):
    """An edit in the words of the page's diff: "Amount: 500 → 450; Currency: USD → EUR", each field by
    its label (as static/js/schema-editor.js names it), the first `most` and how many more. Walked leaf
    by leaf as that script walks them, not with jsonpatch (the runner's _diff for the model): a patch says
    a list's change as moves and shifted indexes, which a reviewer does not read as the fields they edited."""
    names = labels(tool_name)
    said = []

    def shown(value):
        if value is _NONE:
            return gettext("(none)")
        if value == "":
            return gettext("(empty)")
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def name(path):
        parts = []
        for i, p in enumerate(path):
            if isinstance(p, int):
                parts.append(f"#{p + 1}")
                continue
            key = ".".join("*" if isinstance(q, int) else q for q in path[:i + 1])
            parts.append(names.get(key) or p.replace("_", " "))
        return " › ".join(parts) or gettext("(arguments)")

    def walk(a, b, path):
        if a is _NONE and isinstance(b, (dict, list)) or b is _NONE and isinstance(a, (dict, list)):
            empty = type(b if a is _NONE else a)()  # a field added or removed whole: each of its leaves
            a, b = (empty, b) if a is _NONE else (a, empty)
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                walk(a.get(key, _NONE), b.get(key, _NONE), (*path, key))
        elif isinstance(a, list) and isinstance(b, list):
            for i in range(max(len(a), len(b))):
                walk(a[i] if i < len(a) else _NONE, b[i] if i < len(b) else _NONE, (*path, i))
        elif a != b or isinstance(a, bool) != isinstance(b, bool):
            said.append(f"{name(path)}: {shown(a)} → {shown(b)}")

    walk(before, after, ())
    text = "; ".join(said[:most])
    if len(said) > most:
        text += " " + ngettext("(and %(count)s more change)", "(and %(count)s more changes)",
                               len(said) - most) % {"count": len(said) - most}
    return text


_NONE = object()  # changes: a field one side lacks
