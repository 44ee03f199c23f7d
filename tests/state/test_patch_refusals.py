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
