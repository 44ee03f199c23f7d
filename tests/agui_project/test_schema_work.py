"""A caller's JSON Schema cannot make its check take unbounded work (agui_project/json_schema.py):
a 1.5 KB chain of `$ref`s doubling at each level took 2^depth steps (14 s at depth 19), an `enum`
was scanned for each value, `uniqueItems` compared every pair; and a `$schema` inside a subschema
made jsonschema switch to its own validator class there, with patterns on Python's `re`."""

import itertools
import random

import jsonschema
import pytest

from agui_project import json_schema

pytestmark = pytest.mark.django_db


def fan_out(depth):
    defs = {f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i + 1}"}, {"$ref": f"#/$defs/a{i + 1}"}]} for i in range(depth)}
    defs[f"a{depth}"] = {"type": "integer"}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/a0"}}}


def ask(api, schema, arguments):
    return api("bob").post("/api/approvals/", {"tool_name": "crm.tag", "arguments": arguments, "schema": schema},
                           format="json")


PATTERNS = {"type": "object", "patternProperties": {f"^k{i}$": {"type": "integer"} for i in range(50)}}
BIG_DEFAULT = {"type": "object", "properties": {"xs": {"type": "array", "items": {
    "type": "object", "properties": {"tags": {"type": "array", "default": list(range(200))}}}}}}


@pytest.mark.parametrize("schema, arguments", [
    (fan_out(25), {"x": 1}),  # 2^25 applications of the last level
    (PATTERNS, {f"k{i}": i for i in range(1100)}),  # a search per name and pattern: 55,000
    ({"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}},
     {"xs": [[i] * 600 for i in range(100)]}),  # 60,000 values hashed
    (BIG_DEFAULT, {"xs": [{}] * 1000}),  # a default of 201 values copied into each of 1,000 items
])
def test_a_check_past_its_steps_is_refused_as_the_schemas_fault(api, schema, arguments):
    resp = ask(api, schema, arguments)
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_schema", resp.content
    said = resp.json()["schema"][0]
    assert said.startswith("these arguments cannot be checked against the schema: it takes more than 50000 steps")


def test_the_same_schema_with_fewer_levels_or_values_is_checked(api):
    assert ask(api, fan_out(8), {"x": 1}).status_code == 201  # 2^8 steps
    refused = ask(api, fan_out(8), {"x": "one"})
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_arguments", refused.content
    enum = {"type": "object", "properties": {"xs": {"type": "array", "items": {"enum": list(range(8000))}}}}
    assert ask(api, enum, {"xs": [7999] * 2000}).status_code == 201  # hashed once, not 16 million comparisons
    assert ask(api, BIG_DEFAULT, {"xs": [{}] * 100}).status_code == 201


def test_a_reviewers_edit_is_bounded_the_same_way(api):
    from approvals.models import ApprovalRequest

    made = ask(api, BIG_DEFAULT, {"xs": [{}]})
    assert made.status_code == 201, made.content
    resp = api("rita").post(f"/api/approvals/{made.json()['id']}/decide/",
                            {"decision": "approve", "arguments": {"xs": [{}] * 1000}}, format="json")
    assert resp.status_code == 400, resp.content
    assert ApprovalRequest.objects.get(pk=made.json()["id"]).status == "pending"


def test_unique_items_by_hashing_says_what_jsonschema_says():
    """The same verdict as jsonschema's pairwise uniqueItems, on values where JSON equality is not
    Python's: 1 and 1.0 are one number, true and 1 are not, an object's keys in any order."""
    ours = json_schema.validator({"type": "array", "uniqueItems": True})
    theirs = jsonschema.Draft202012Validator({"type": "array", "uniqueItems": True})
    atoms = [0, 1, 1.0, True, False, None, "1", "", [1], [1.0], [True], {"a": 1}, {"a": 1.0}, {"b": 1, "a": 2},
             {"a": 2, "b": 1}, {"a": [1, {"c": None}]}, {"a": [1.0, {"c": None}]}, [[]], [{}]]
    rng = random.Random(16)
    cases = [list(pair) for pair in itertools.combinations(atoms, 2)]
    cases += [rng.sample(atoms, rng.randint(0, 6)) for _ in range(300)]
    for case in cases:
        assert bool(json_schema.errors(ours, case)) == (not theirs.is_valid(case)), case


def test_unique_items_over_many_objects_is_one_pass():
    ours = json_schema.validator({"type": "array", "uniqueItems": True})
    many = [{"a": i} for i in range(20_000)]  # pairwise: 200 million comparisons
    assert json_schema.errors(ours, many) == []
    assert [e.validator for e in json_schema.errors(ours, [*many, {"a": 7.0}])] == ["uniqueItems"]


def test_a_subschemas_own_dialect_does_not_leave_our_patterns():
    """jsonschema switched to its Draft 4 class under a `$schema` of a subschema: `\\d` then took
    full-width digits (Python's `re`), and `^(a+)+$` backtracked for minutes."""
    schema = {"type": "object", "properties": {
        "n": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "string", "pattern": r"^\d+$"}}}
    checked = json_schema.validator(schema)
    assert [e.validator for e in json_schema.errors(checked, {"n": "１２３"})] == ["pattern"]  # RE2: ASCII digits
    assert json_schema.errors(checked, {"n": "123"}) == []
    assert schema["properties"]["n"]["$schema"]  # the caller's schema is left as it was sent


def test_a_validator_used_outside_errors_refuses_to_run():
    """Every check goes through json_schema.errors(), which bounds it: a new path that did not would
    run unbounded, so it fails at once instead."""
    checked = json_schema.validator({"type": "object"})
    with pytest.raises(RuntimeError, match="outside json_schema.errors"):
        list(checked.iter_errors({}))


def test_enum_and_const_by_hashing_say_what_jsonschema_says():
    atoms = [0, 1, 1.0, True, False, None, "1", [1], [1.0], {"a": 1}, {"a": 1.0}, {"b": 1, "a": 2}, {"a": 2, "b": 1}]
    for allowed in atoms:
        for value in atoms:
            for schema in ({"enum": [allowed, "other"]}, {"const": allowed}):
                theirs = jsonschema.Draft202012Validator(schema).is_valid(value)
                assert (not json_schema.errors(json_schema.validator(schema), value)) == theirs, (schema, value)


def test_a_schema_of_too_many_patterns_is_refused_before_they_are_compiled(api):
    """1,700 distinct patterns in a 64 KB schema took 3.3 s of a web process to compile, per request
    (a pattern too large for RE2's 1 MB, such as a rule's `[\\pL\\pN]{400}`: tests/approvals/test_policy.py)."""
    many = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": f"^x{i}$"} for i in range(51)}}
    resp = ask(api, many, {})
    assert resp.status_code == 400 and "more than 50 different patterns" in resp.json()["schema"][0], resp.content
    fifty = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": f"^x{i}$"} for i in range(50)}}
    assert ask(api, fifty, {"p1": "x1"}).status_code == 201
