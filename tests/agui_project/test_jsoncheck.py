"""The JSON gate's own checks (agui_project/jsoncheck.py), on texts whose strings hold what its
measures must not count: brackets, quotes and backslashes, escaped or not."""

import json

import pytest

from agui_project import jsoncheck


def nested(depth, key='k"[\\'):
    value = "x"
    for level in range(depth):
        value = {key: value} if level % 2 else [value]
    return value


STRINGS = ['[' * 300, '"' + '[' * 300, '\\' + '[' * 300, '\\"' + '{' * 300, '\\\\' * 3 + '"' + '[' * 300, 'a"b[']


@pytest.mark.parametrize("encoding", [None, "utf-8", "utf-16", "utf-32"])
@pytest.mark.parametrize("inner", STRINGS)
def test_depth_counts_brackets_outside_strings_only(inner, encoding):
    for depth, ok in ((200, True), (201, False)):
        value = nested(depth - 1)
        value = [value, inner] if isinstance(value, list) else {"s": inner, "v": value}
        text = json.dumps(value, ensure_ascii=False)
        raw = text if encoding is None else text.encode(encoding)
        assert jsoncheck.depth_ok(raw) is ok, (depth, inner[:8], encoding)
        if ok:
            assert jsoncheck.loads(raw) == value
        else:
            with pytest.raises(jsoncheck.Refused) as refused:
                jsoncheck.loads(raw)
            assert refused.value.refusal.code == "too_deep"


def test_a_shallow_text_with_many_brackets_in_its_strings_passes():
    value = {"messages": [{"content": "[{" * 500, "args": json.dumps({"a": [[1]] * 300})} for _ in range(3)]}
    assert jsoncheck.depth_ok(json.dumps(value)) and jsoncheck.loads(json.dumps(value).encode()) == value


def test_numbers_of_too_many_digits_are_refused_and_long_runs_of_fewer_are_not():
    limit = jsoncheck.MAX_DIGITS
    assert jsoncheck.loads("[" + "7" * limit + "]") == [int("7" * limit)]
    with pytest.raises(jsoncheck.Refused) as refused:
        jsoncheck.loads("[1, " + "7" * (limit + 1) + "]")
    assert refused.value.refusal.code == "invalid_number"
    # many runs just under the limit in a text that is not JSON: not refused for their length
    # (each run is tried from its first digit: tried at every digit, 1 MB of them took seconds)
    assert jsoncheck.check_body((("1" * limit + " ") * 50).encode()) is None
    refusal = jsoncheck.check_body(("[" + "1" * limit + " " + "2" * (limit + 1)).encode())
    assert refusal is not None and refusal.code == "invalid_number"
