"""A JSON Patch operation that does not apply is said in our words, without the document."""

import pytest

from state import services


@pytest.mark.django_db
@pytest.mark.parametrize("op, reason", [
    ({"op": "remove", "path": "/secret/nothing"}, "nothing is there to change"),
    ({"op": "add", "path": "/nowhere/deeper", "value": 1}, "nothing in the state is at that path"),
    ({"op": "replace", "path": "/missing", "value": 1}, "nothing is there to change"),
    ({"op": "test", "path": "/secret", "value": "x"}, "the value there is not the one the test expects"),
    ({"op": "move", "from": "/nowhere/x", "path": "/y"}, "nothing in the state is at that path"),
])
def test_a_patch_that_does_not_apply_is_said_without_the_document(op, reason):
    services.apply_patch("doc:patch-refusal", [{"op": "add", "path": "/secret", "value": {"k": "S3CRET-" * 50}}],
                         source="user")
    with pytest.raises(services.StateInvalid) as caught:
        services.apply_patch("doc:patch-refusal", [{"op": "add", "path": "/a", "value": 1}, op], source="user")
    message = caught.value.message
    assert message.startswith(f'Operation 2 ({op["op"]} at "') and reason in message, message
    assert "S3CRET" not in message and "S3CRET" not in str(caught.value.errors)
    assert caught.value.errors == [{"path": "patch.1", "message": caught.value.errors[0]["message"]}]


@pytest.mark.django_db
@pytest.mark.parametrize("op, problem", [
    ({"op": "frobnicate", "path": "/a"}, 'its "op" is none of add, remove, replace, move, copy, test'),
    ({"path": "/a", "value": 1}, 'its "op" is none of'),
    ({"op": "add", "path": "a", "value": 1}, 'its "path" is not a JSON Pointer'),
    ({"op": "remove"}, 'its "path" is not a JSON Pointer'),
    ({"op": "replace", "path": 7, "value": 1}, 'its "path" is not a JSON Pointer'),
    ({"op": "move", "path": "/b"}, 'its "from" is not a JSON Pointer'),
    ({"op": "test", "path": "/a"}, 'it has no "value"'),
])
def test_a_malformed_operation_is_said_in_our_words_and_changes_nothing(op, problem):
    """It was jsonpatch's English ("not a valid JSON Patch: Operation must be a string"), also to a reader
    of another language; an operation checked only when applied slipped past the check."""
    services.apply_patch("doc:malformed", [{"op": "add", "path": "/a", "value": 1}], source="user")
    with pytest.raises(services.StateInvalid) as caught:
        services.apply_patch("doc:malformed", [{"op": "add", "path": "/c", "value": 2}, op], source="user")
    assert caught.value.message.startswith("Operation 2 is not a JSON Patch operation: ") and problem in \
        caught.value.message, caught.value.message
    assert caught.value.errors == [{"path": "patch.1", "message": caught.value.errors[0]["message"]}]
    assert services.snapshot("doc:malformed") == ({"a": 1}, 1)


@pytest.mark.django_db
def test_a_malformed_operation_is_said_in_the_readers_language():
    from django.utils import translation

    with translation.override("fr"), pytest.raises(services.StateInvalid) as caught:
        services.apply_patch("doc:malformed-fr", [{"op": "frobnicate", "path": "/a"}], source="user")
    assert caught.value.message.startswith("L'opération 1 ") and "frobnicate" not in caught.value.message
