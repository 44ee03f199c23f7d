"""A registered tool's arguments editor in the reader's language: the labels its author gave as
msgids (ToolDefaults.labels: pydantic Field titles, gettext_noop) and its schema's descriptions said
through the catalogue (the same English text is the model's). An outside agent's schema, and an MCP
server's, is shown as given: its words are its own, and labels it chose could call a field something
it is not, so none are taken from it."""

import copy

from django.utils.translation import gettext

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
