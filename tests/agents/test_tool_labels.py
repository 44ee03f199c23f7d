"""Every argument of this project's own tools has a label for the reviewer's editor (a Field title
given as a msgid: ToolDefaults.labels), at every depth: the recipe, document and preferences tools
showed their schema's names ("skill_level", "metadata") on every language's page. That the msgids
are in every catalogue is tests/people/test_catalogues.py's to check."""

import pytest

from agents.registry import TOOLS


def _resolve(schema, node):
    while isinstance(node, dict) and "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def argument_paths(schema, node=None, prefix=""):
    """The editor's paths of an arguments schema: each property, an array's items as "*"."""
    node = _resolve(schema, schema if node is None else node)
    for name, sub in (node.get("properties") or {}).items():
        yield prefix + name
        sub = _resolve(schema, sub)
        if sub.get("type") == "array" and isinstance(sub.get("items"), dict):
            yield from argument_paths(schema, sub["items"], prefix + name + ".*.")
        elif sub.get("properties"):
            yield from argument_paths(schema, sub, prefix + name + ".")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_argument_of_our_own_tools_has_a_label(name):
    defaults = TOOLS[name].defaults()
    paths = list(argument_paths(defaults.schema))
    assert paths, defaults.schema
    assert [p for p in paths if p not in defaults.labels] == []
    assert set(defaults.labels) <= set(paths)  # no label for a field that is not there


def test_a_recipes_nested_fields_are_labelled_to_the_ingredients_fields():
    labels = TOOLS["update_recipe"].defaults().labels
    assert labels["recipe.ingredients.*.amount"] == "Amount" and labels["recipe.skill_level"] == "Skill level"
