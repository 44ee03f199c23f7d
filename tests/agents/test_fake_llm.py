"""The fake chat-completions server speaks OpenAI well enough for the real `openai` client."""

import json

import openai
import pytest
from openai import OpenAI

from tests.fake_llm import FakeLLM


@pytest.fixture(scope="module")
def server():
    with FakeLLM() as llm:
        yield llm


@pytest.fixture
def llm(server):
    server.reset()
    server.responder = lambda body: {"text": "from the responder"}  # no dependency on agents
    yield server
    server.reset()


@pytest.fixture
def client(llm):
    return OpenAI(base_url=llm.base_url, api_key="test", max_retries=0)


def stream(client, **kw):
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    return list(client.chat.completions.create(model="m", stream=True, **kw))


def test_streamed_text_reassembles_exactly(llm, client):
    text = "  Hello there,\n this is  a streamed\treply with several words. "
    llm.push({"text": text})
    chunks = stream(client)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert "".join(pieces) == text
    assert len(pieces) == 4  # about three words each
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)


def test_tool_call_arguments_reassemble(llm, client):
    args = {"to": "finance@example.com", "amount": 1250.5, "note": "ünïcode ✓"}
    llm.push({"text": "Let me do that.", "tool_calls": [
        {"id": "call_1", "name": "send_payment", "arguments": json.dumps(args)},
        {"id": "call_2", "name": "notify", "arguments": "{}"}]})
    chunks = stream(client, tools=[{"type": "function", "function": {"name": "send_payment"}}])
    calls: dict[int, dict] = {}
    for c in chunks:
        for d in c.choices[0].delta.tool_calls or []:
            call = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = d.id or call["id"]
            call["name"] = (d.function.name if d.function else None) or call["name"]
            call["arguments"] += (d.function.arguments if d.function else None) or ""
    assert calls[0]["id"] == "call_1" and calls[0]["name"] == "send_payment"
    assert json.loads(calls[0]["arguments"]) == args
    assert calls[1] == {"id": "call_2", "name": "notify", "arguments": "{}"}
    arg_deltas = [d for c in chunks for d in c.choices[0].delta.tool_calls or [] if not d.id]
    assert len(arg_deltas) > 3  # arguments really arrive in pieces
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_error_status_raises(llm, client):
    llm.push({"error": 500})
    with pytest.raises(openai.InternalServerError):
        stream(client)
    llm.push({"error": 429})
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="m", messages=[])


def test_cut_stream_is_a_connection_error(llm, client):
    llm.push({"text": "one two three four five six seven eight nine", "cut": True})
    got = []
    with pytest.raises(openai.APIConnectionError):
        for c in client.chat.completions.create(model="m", messages=[], stream=True):
            got.append(c.choices[0].delta.content or "")
    assert "".join(got) == "one two three "


def test_requests_recorded_and_responder_used_when_queue_empty(llm, client):
    llm.push("queued")
    first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    second = stream(client, messages=[{"role": "user", "content": "b"}])
    assert first.choices[0].message.content == "queued"
    assert "".join(c.choices[0].delta.content or "" for c in second) == "from the responder"
    assert [r["messages"][0]["content"] for r in llm.requests] == ["a", "b"]
    assert llm.requests[1]["stream"] is True


def test_non_stream_tool_calls_json_mode_and_models(llm, client):
    llm.push({"tool_calls": [{"id": "c9", "name": "f", "arguments": '{"x": 1}'}]},
             {"text": '{"ok": true}'})
    msg = client.chat.completions.create(model="m", messages=[]).choices[0].message
    assert msg.tool_calls[0].id == "c9" and json.loads(msg.tool_calls[0].function.arguments) == {"x": 1}
    out = client.chat.completions.create(model="m", messages=[],
                                         response_format={"type": "json_object"})
    assert json.loads(out.choices[0].message.content) == {"ok": True}
    assert [m.id for m in client.models.list().data] == ["fake-model"]


# ---------------------------------------------------------------- refusals like the real API
SYSTEM, USER = {"role": "system", "content": "s"}, {"role": "user", "content": "u"}


def assistant_calls(*ids):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]}


def tool(call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def refused(llm, client, messages, streaming):
    llm.push("must stay queued")
    with pytest.raises(openai.BadRequestError) as info:
        if streaming:
            stream(client, messages=messages)
        else:
            client.chat.completions.create(model="m", messages=messages)
    assert info.value.status_code == 400 and info.value.type == "invalid_request_error"
    assert llm.requests == [] and len(llm.rejected) == 1  # refused before any reply was used
    assert client.chat.completions.create(model="m", messages=[USER]).choices[0].message.content == "must stay queued"
    return info.value


@pytest.mark.parametrize("streaming", [True, False])
def test_orphan_tool_message_is_refused(llm, client, streaming):
    err = refused(llm, client, [SYSTEM, USER, tool("call_x")], streaming)
    assert "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'" in err.message
    assert err.param == "messages.[2].role"


def test_tool_message_for_another_call_or_after_a_user_turn_is_refused(llm, client):
    err = refused(llm, client, [USER, assistant_calls("c1"), tool("c2")], False)
    assert "must be a response to a preceeding message with 'tool_calls'" in err.message
    llm.reset()
    err = refused(llm, client, [USER, assistant_calls("c1"), tool("c1"), USER, tool("c1")], True)
    assert err.param == "messages.[4].role"


@pytest.mark.parametrize("streaming", [True, False])
def test_unanswered_tool_call_is_refused(llm, client, streaming):
    err = refused(llm, client, [USER, assistant_calls("c1", "c2"), tool("c1"), USER], streaming)
    assert ("An assistant message with 'tool_calls' must be followed by tool messages responding to "
            "each 'tool_call_id'. The following tool_call_ids did not have response messages: c2") in err.message
    assert err.param == "messages.[3].role"
    llm.reset()
    err = refused(llm, client, [USER, assistant_calls("c3")], streaming)  # unanswered at the end too
    assert "did not have response messages: c3" in err.message


def test_unknown_role_and_empty_assistant_are_refused(llm, client):
    err = refused(llm, client, [USER, {"role": "robot", "content": "beep"}], True)
    assert "Invalid value: 'robot'. Supported values are:" in err.message and err.param == "messages.[1].role"
    llm.reset()
    err = refused(llm, client, [USER, {"role": "assistant", "content": None}, USER], False)
    assert "Invalid value for 'content': expected a string, got null." in err.message
    assert err.param == "messages.[1].content"


def test_content_parts_are_checked_like_openai(llm, client):
    parts = [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "url", "value": "https://x/a.png"}}]
    err = refused(llm, client, [{"role": "user", "content": parts}], True)
    assert "Invalid value: 'image'. Supported values are: 'text', 'image_url'" in err.message
    assert err.param == "messages[0].content[1].type"
    llm.reset()
    bad = [{"type": "image_url", "image_url": {"url": "data:text/html;base64,PGI+"}}]
    err = refused(llm, client, [{"role": "user", "content": bad}], False)
    assert "Expected a base64-encoded data URL with an image MIME type" in err.message
    llm.reset()
    good = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO="}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    llm.push("an image")
    assert "".join(c.choices[0].delta.content or "" for c in stream(client, messages=[
        {"role": "user", "content": good}])) == "an image"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_streams_before_the_answer(llm, client, field):
    llm.push({"reasoning": "First think, then answer.", "reasoning_field": field, "text": "Answer."})
    deltas = [c.choices[0].delta.model_dump() for c in stream(client)]
    reasoning = "".join(d.get(field) or "" for d in deltas)
    assert reasoning == "First think, then answer." and deltas[0]["role"] == "assistant"
    first_text = next(i for i, d in enumerate(deltas) if d.get("content"))
    assert all(not d.get(field) for d in deltas[first_text:])  # like DeepSeek: all of it comes first
    assert "".join(d.get("content") or "" for d in deltas) == "Answer."


def test_valid_tool_round_trips_are_accepted(llm, client):
    messages = [SYSTEM, USER, assistant_calls("c1", "c2"), tool("c2"), tool("c1"),
                {"role": "assistant", "content": "done"}, USER, assistant_calls("c3"), tool("c3")]
    llm.push("fine")
    assert "".join(c.choices[0].delta.content or "" for c in stream(client, messages=messages)) == "fine"
    assert llm.rejected == [] and len(llm.requests) == 1


def test_product_maps_the_refusal_to_a_model_error(llm, settings):
    from agents.llm import ModelError, OpenAIChatModel

    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "test", llm.base_url
    with pytest.raises(ModelError, match="preceeding message with 'tool_calls'"):  # not "unavailable"
        list(OpenAIChatModel().stream([USER, tool("nope")], []))


def fn(name):
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


def test_too_many_tools_or_a_name_out_of_pattern_is_refused(llm, client):
    with pytest.raises(openai.BadRequestError) as info:
        stream(client, tools=[fn(f"t{i}") for i in range(129)])
    assert info.value.code == "array_above_max_length" and info.value.param == "tools"
    assert "Expected an array with maximum length 128, but got an array with length 129" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        stream(client, tools=[fn("ok"), fn("show chart")])
    assert info.value.param == "tools[1].function.name" and "does not match pattern" in info.value.message
    assert len(llm.rejected) == 2 and llm.requests == []
    assert stream(client, tools=[fn(f"t{i}") for i in range(128)])  # 128 is taken
