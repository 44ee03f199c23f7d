"""state.services: versioned JSON documents, JSON Patch changes, schema checks, predictions."""

import jsonpatch
import pytest

from agents.catalog.recipe import AGENT as RECIPE_AGENT
from agents.llm.scripted.state import CARBONARA
from state import services
from state.models import SharedState, StateChange

pytestmark = pytest.mark.django_db
KEY = "thread:test-state"
SCHEMA = RECIPE_AGENT.state_schema


def changes():
    return list(StateChange.objects.filter(state__key=KEY).order_by("pk").values("version", "source", "status", "patch"))


def test_replace_and_patch_return_the_patch_applied_and_bump_the_version():
    patch = services.replace(KEY, {"a": 1, "b": [1]}, source="agent")
    assert jsonpatch.apply_patch({}, patch) == {"a": 1, "b": [1]}
    assert services.snapshot(KEY) == ({"a": 1, "b": [1]}, 1)

    ops = [{"op": "add", "path": "/b/-", "value": 2}, {"op": "remove", "path": "/a"}]
    assert services.apply_patch(KEY, ops, source="user", base_version=1) == ops
    assert services.snapshot(KEY) == ({"b": [1, 2]}, 2)

    assert services.replace(KEY, {"b": [1, 2]}, source="agent") == []  # nothing changed: no version
    assert services.snapshot(KEY)[1] == 2
    assert [(c["version"], c["source"], c["status"]) for c in changes()] == [
        (1, "agent", "committed"), (2, "user", "committed")]
    assert changes()[1]["patch"] == ops


def test_a_stale_base_version_is_refused_with_the_current_document():
    services.replace(KEY, {"a": 1}, source="agent")
    services.replace(KEY, {"a": 2}, source="agent")
    with pytest.raises(services.StateConflict) as caught:
        services.apply_patch(KEY, [{"op": "replace", "path": "/a", "value": 99}], source="user", base_version=1)
    assert caught.value.document.version == 2 and caught.value.document.view == {"a": 2}
    assert str(caught.value) == "the state changed since version 1; the current version is 2"
    with pytest.raises(services.StateConflict):
        services.replace(KEY, {"a": 99}, source="user", base_version=0)
    with pytest.raises(services.StateConflict) as caught:  # a version never given out: not "changed since"
        services.replace(KEY, {"a": 99}, source="user", base_version=999)
    assert str(caught.value) == "there is no version 999 of the state yet; the current version is 2"
    assert services.snapshot(KEY) == ({"a": 2}, 2)  # never a lost update


def test_schema_violations_and_bad_patches_change_nothing():
    services.replace(KEY, {"recipe": CARBONARA}, source="agent", schema=SCHEMA)
    bad = [{"op": "replace", "path": "/recipe/cooking_time", "value": "3 hours"}]
    with pytest.raises(services.StateInvalid) as caught:
        services.apply_patch(KEY, bad, source="user", base_version=1, schema=SCHEMA)
    assert caught.value.errors[0]["path"] == "/recipe/cooking_time"
    # in sentences of ours (translated), the place named once: not jsonschema's "'3 hours' is not one of [...]"
    assert caught.value.errors[0]["message"] == "Must be one of: 5 min, 15 min, 30 min, 45 min, 60+ min."
    assert caught.value.message == ("The shared state does not match the schema at /recipe/cooking_time: "
                                    "Must be one of: 5 min, 15 min, 30 min, 45 min, 60+ min.")
    with pytest.raises(services.StateInvalid):  # unknown top-level key
        services.apply_patch(KEY, [{"op": "add", "path": "/junk", "value": 1}], source="user", schema=SCHEMA)
    with pytest.raises(services.StateInvalid):  # does not apply
        services.apply_patch(KEY, [{"op": "remove", "path": "/nothing"}], source="user")
    with pytest.raises(services.StateInvalid):  # not a patch
        services.apply_patch(KEY, [{"op": "explode", "path": "/recipe"}], source="user")
    with pytest.raises(services.StateInvalid):
        services.apply_patch(KEY, {"op": "remove"}, source="user")
    with pytest.raises(services.StateInvalid):  # the document stays an object
        services.apply_patch(KEY, [{"op": "replace", "path": "", "value": [1]}], source="user")
    assert services.snapshot(KEY) == ({"recipe": CARBONARA}, 1)
    assert len(changes()) == 1


def test_the_short_schema_form_of_the_seed_is_accepted():
    short = {"recipe": {"type": "object", "description": "The current recipe"}}
    services.replace(KEY, {"recipe": {"title": "x"}}, source="agent", schema=short)
    with pytest.raises(services.StateInvalid):
        services.replace(KEY, {"recipe": "not an object"}, source="agent", schema=short)


def test_a_prediction_is_visible_provisional_then_committed():
    services.replace(KEY, {"note": "hi"}, source="user")
    before = services.predict(KEY, "call_1", {"recipe": {"title": "Carb"}})
    assert before.view == {"note": "hi"}
    doc = services.document(KEY)
    assert doc.data == {"note": "hi"} and doc.version == 1  # a prediction is not a version
    assert doc.view == {"note": "hi", "recipe": {"title": "Carb"}}
    assert doc.provisional == {"recipe": "call_1"}

    services.predict(KEY, "call_1", {"recipe": CARBONARA})  # the complete arguments
    assert StateChange.objects.filter(state__key=KEY, status="provisional").count() == 1

    # nobody edits what is about to be committed or reverted; other keys stay editable
    with pytest.raises(services.PredictionPending):
        services.apply_patch(KEY, [{"op": "replace", "path": "/recipe/title", "value": "x"}], source="user")
    with pytest.raises(services.PredictionPending):
        services.apply_patch(KEY, [{"op": "copy", "from": "/recipe", "path": "/copy"}], source="user")
    services.apply_patch(KEY, [{"op": "replace", "path": "/note", "value": "ho"}], source="user", base_version=1)

    patch = services.commit_prediction(KEY, "call_1", schema=SCHEMA | {"additionalProperties": True})
    assert patch == [{"op": "add", "path": "/recipe", "value": CARBONARA}]
    assert services.snapshot(KEY) == ({"note": "ho", "recipe": CARBONARA}, 3)
    row = StateChange.objects.get(state__key=KEY, ref="call_1")
    assert (row.status, row.version, row.source, row.base_version) == ("committed", 3, "prediction", 1)
    assert services.document(KEY).provisional == {}


def test_a_commit_takes_edited_values_and_checks_the_schema():
    services.predict(KEY, "call_1", {"recipe": CARBONARA})
    with pytest.raises(services.StateInvalid):
        services.commit_prediction(KEY, "call_1", {"recipe": {**CARBONARA, "skill_level": "Wizard"}}, schema=SCHEMA)
    assert services.document(KEY).provisional == {"recipe": "call_1"}  # still live: the caller reverts it
    edited = {**CARBONARA, "title": "Edited"}
    services.commit_prediction(KEY, "call_1", {"recipe": edited}, schema=SCHEMA)
    assert services.snapshot(KEY) == ({"recipe": edited}, 1)


def test_a_reverted_prediction_leaves_the_last_committed_state():
    services.replace(KEY, {"recipe": CARBONARA}, source="agent")
    services.predict(KEY, "call_1", {"recipe": {"title": "Something else"}})
    services.predict(KEY, "call_2", {"other": 1})
    assert services.view(KEY)[0] == {"recipe": {"title": "Something else"}, "other": 1}
    assert services.revert_prediction(KEY, "call_1") is True
    assert services.revert_prediction(KEY, "call_1") is False
    assert services.view(KEY) == ({"recipe": CARBONARA, "other": 1}, 1)
    assert services.revert_predictions(KEY, keep={"nothing"}) == ["call_2"]
    assert services.view(KEY) == ({"recipe": CARBONARA}, 1)
    assert SharedState.objects.get(key=KEY).version == 1


def test_replace_compares_with_what_clients_see():
    services.replace(KEY, {"a": 1}, source="agent")
    services.predict(KEY, "call_1", {"recipe": {"title": "C"}})
    # a client that sends back the view (prediction included) changes only what it changed
    patch = services.replace(KEY, {"a": 2, "recipe": {"title": "C"}}, source="user", base_version=1)
    assert patch == [{"op": "replace", "path": "/a", "value": 2}]
    with pytest.raises(services.PredictionPending):
        services.replace(KEY, {"a": 2, "recipe": {"title": "mine"}}, source="user", base_version=2)
    assert services.snapshot(KEY) == ({"a": 2}, 2)


def test_people_changed_since_names_the_keys_a_person_changed_after_a_version(demo):
    services.replace(KEY, {"a": 1, "b": 2}, source=StateChange.Source.AGENT)  # v1
    services.apply_patch(KEY, [{"op": "replace", "path": "/a", "value": 10}],
                         source=StateChange.Source.USER, user=demo["alice"])  # v2
    services.predict(KEY, "call-1", {"b": 3}, base_version=1)
    services.commit_prediction(KEY, "call-1")  # v3: an agent's write is not a person's edit
    assert services.people_changed_since(KEY, 1, ["a", "b"]) == {"a": 10}
    assert services.people_changed_since(KEY, 2, ["a", "b"]) == {}  # read after the edit
    assert services.people_changed_since(KEY, 1, ["b"]) == {}  # not a key the writer writes
    services.replace(KEY, {"a": 10, "b": 3, "c": 4}, source=StateChange.Source.USER)  # v4 adds c
    assert services.people_changed_since(KEY, 3, ["b", "c"]) == {"c": 4}
    services.apply_patch(KEY, [{"op": "replace", "path": "", "value": {"z": 0}}], source=StateChange.Source.USER)
    assert services.people_changed_since(KEY, 4, ["a", "z"]) == {"a": None, "z": 0}  # the whole document


def test_a_prediction_keeps_the_version_its_author_read(demo):
    services.replace(KEY, {"a": 1}, source=StateChange.Source.AGENT)
    services.replace(KEY, {"a": 2}, source=StateChange.Source.USER)
    services.predict(KEY, "call-1", {"a": 3}, base_version=1)
    services.predict(KEY, "call-1", {"a": 4}, base_version=2)  # an update keeps the first base
    assert services.prediction_base(KEY, "call-1") == 1
    services.predict(KEY, "call-2", {"a": 5})
    assert services.prediction_base(KEY, "call-2") == 2  # default: the current version
    assert services.prediction_base(KEY, "nothing") is None


def test_a_patch_that_changes_nothing_makes_no_version(demo):
    """A patch of `test`s (a client checking what it holds) or of values as they were made a new
    version: every other client's next change, made from the version before, was then refused as
    a conflict, and the no-op went to every socket as a STATE_DELTA."""
    services.replace(KEY, {"a": 1, "b": [1, 2]}, source=StateChange.Source.AGENT)  # v1
    assert services.apply_patch(KEY, [{"op": "test", "path": "/a", "value": 1}],
                                source=StateChange.Source.USER, base_version=1) == []
    assert services.apply_patch(KEY, [{"op": "replace", "path": "/b/0", "value": 1}],
                                source=StateChange.Source.USER, base_version=1) == []
    assert services.snapshot(KEY) == ({"a": 1, "b": [1, 2]}, 1)
    assert len(changes()) == 1
    ops = [{"op": "replace", "path": "/a", "value": 1.0}]  # 1 -> 1.0 is a change of the JSON
    assert services.apply_patch(KEY, ops, source=StateChange.Source.USER, base_version=1) == ops
    assert services.snapshot(KEY)[1] == 2


def test_a_persons_test_or_copy_source_is_no_edit_of_that_key(demo):
    """The model's write to a key failed with "a person edited <key>" when the person had only
    tested it, or copied from it, since the model read the state."""
    services.replace(KEY, {"a": 1, "b": 2}, source=StateChange.Source.AGENT)  # v1
    services.apply_patch(KEY, [{"op": "test", "path": "/a", "value": 1}, {"op": "copy", "from": "/a", "path": "/c"}],
                         source=StateChange.Source.USER, user=demo["alice"])  # v2: only c changed
    assert services.people_changed_since(KEY, 1, ["a", "c"]) == {"c": 1}
    assert services.keys_changed_since(KEY, 1) == {"c"}
    services.apply_patch(KEY, [{"op": "move", "from": "/b", "path": "/d"}], source=StateChange.Source.USER)
    assert services.people_changed_since(KEY, 2, ["a", "b", "d"]) == {"b": None, "d": 2}  # a move writes both


def test_the_patch_applied_is_told_without_its_tests(demo):
    """The `test`s are held against the document itself; sent on in the STATE_DELTA, the chat page
    compared them with its copy as JSON text (key order counts there) and dropped the whole delta."""
    services.replace(KEY, {"a": {"x": 1, "y": 2}}, source=StateChange.Source.AGENT)  # v1
    ops = [{"op": "test", "path": "/a", "value": {"y": 2, "x": 1}}, {"op": "add", "path": "/b", "value": 3}]
    assert services.apply_patch(KEY, ops, source=StateChange.Source.USER, base_version=1) == [ops[1]]
    assert services.snapshot(KEY) == ({"a": {"x": 1, "y": 2}, "b": 3}, 2)
    assert changes()[-1]["patch"] == [ops[1]]
