"""state/predict.py: partial tool-argument JSON -> predicted state (no database)."""

import json

import jsonpatch

from agents.llm.scripted.state import CARBONARA
from state import predict

CONFIG = {"recipe": {"tool": "update_recipe", "tool_argument": "recipe"}}


def chunks(text, n):
    return [text[i:i + n] for i in range(0, len(text), n)]


def test_partial_parse_keeps_trailing_strings_and_holds_back_numbers():
    assert predict.parse_partial('{"recipe": {"title": "Classic Pa') == {"recipe": {"title": "Classic Pa"}}
    # "1" may still become "12": an unfinished number is not shown yet
    assert predict.parse_partial('{"a": "x", "n": 1') == {"a": "x"}
    assert predict.parse_partial('{"a": "x", "n": 12,') == {"a": "x", "n": 12}
    # digits inside a string are text, not a number
    assert predict.parse_partial('{"a": "Route 66') == {"a": "Route 66"}
    assert predict.parse_partial("") is None
    assert predict.parse_partial("   ") is None


def test_mappings_and_wildcard():
    config = {"document": {"tool": "create_document", "tool_argument": "*"}, **CONFIG}
    assert predict.mappings(config, "create_document") == [("document", "*")]
    args = {"title": "T", "content": "C"}
    assert predict.values_from_arguments(config, "create_document", args) == {"document": args}
    assert predict.values_from_arguments(config, "update_recipe", {"recipe": {"title": "x"}}) == {"recipe": {"title": "x"}}
    assert predict.values_from_arguments(config, "update_recipe", {}) == {}
    assert predict.values_from_arguments(config, "other", args) == {}
    assert predict.mapped_tools(config) == {"create_document", "update_recipe"}


def test_a_streamed_call_predicts_values_that_only_grow_and_end_complete():
    args = json.dumps({"recipe": CARBONARA}, ensure_ascii=False)
    prediction = predict.Prediction(CONFIG, "update_recipe", interval=0)
    shown = [v for v in (prediction.feed(c) for c in chunks(args, 7)) if v]
    final = prediction.finish(args)
    if final:
        shown.append(final)
    assert len(shown) > 20  # every chunk that changed something, with no throttle
    for before, after in zip(shown, shown[1:], strict=False):
        assert predict.grows(before["recipe"], after["recipe"]), (before, after)
        assert before != after
    assert shown[-1] == {"recipe": CARBONARA}


def test_the_throttle_limits_predictions_and_the_end_still_arrives():
    now = [0.0]
    args = json.dumps({"recipe": CARBONARA}, ensure_ascii=False)
    prediction = predict.Prediction(CONFIG, "update_recipe", interval=0.05, clock=lambda: now[0])
    shown = []
    for i, chunk in enumerate(chunks(args, 5)):
        now[0] = i * 0.001  # 1 ms between chunks: a burst
        values = prediction.feed(chunk)
        if values:
            shown.append(values)
    # one per 50 ms window of a burst that lasted len/5 ms
    assert 1 <= len(shown) <= len(args) // 5 // 50 + 2
    assert prediction.finish(args) == {"recipe": CARBONARA}
    assert prediction.finish(args) is None  # nothing new


def test_grows():
    assert predict.grows({"a": "x"}, {"a": "xy", "b": 1})
    assert not predict.grows({"a": "xy"}, {"a": "x"})
    assert predict.grows([{"n": "a"}], [{"n": "ab"}, {}])
    assert not predict.grows([1, 2], [1])
    assert not predict.grows({"a": 1}, {"a": 2})


def test_delta_ops_add_first_then_replace_and_apply_cleanly():
    doc = {"other": 1}
    first = predict.delta_ops({"recipe": {"title": "C"}}, present=set(doc))
    assert first == [{"op": "add", "path": "/recipe", "value": {"title": "C"}}]
    doc = jsonpatch.apply_patch(doc, first)
    second = predict.delta_ops({"recipe": {"title": "Ca"}}, present=set(doc))
    assert second[0]["op"] == "replace"
    assert jsonpatch.apply_patch(doc, second) == {"other": 1, "recipe": {"title": "Ca"}}
    assert predict.pointer("a/b~c") == "/a~1b~0c"
