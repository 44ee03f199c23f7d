"""agents.llm.OpenAIChatModel reads the SDK's raw stream itself: what it yields, and how a broken
stream becomes ModelError / ModelUnavailable. Through the real openai client and tests/fake_llm.py."""

import contextlib
import json
import threading

import pytest

from agents.llm import (
    AnswerCut,
    ModelError,
    ModelUnavailable,
    OpenAIChatModel,
    TextDelta,
    ToolCallDelta,
    sse_data,
)
from agents.llm.openai_chat import drain_later


def drain():
    return list(OpenAIChatModel().stream([{"role": "user", "content": "hi"}], []))


def test_text_and_tool_call_deltas(fake_llm):
    args = json.dumps({"amount": 12.5, "note": "ünïcode ✓"})
    fake_llm.push({"text": "Sending it now.", "tool_calls": [{"id": "call_1", "name": "transfer_money",
                                                             "arguments": args}]})
    out = drain()
    assert "".join(d.text for d in out if isinstance(d, TextDelta)) == "Sending it now."
    calls = [d for d in out if isinstance(d, ToolCallDelta)]
    assert (calls[0].index, calls[0].id, calls[0].name) == (0, "call_1", "transfer_money")
    assert "".join(d.arguments for d in calls) == args
    assert all(d.id is None and d.name is None for d in calls[1:])


def test_error_object_inside_the_stream_is_model_error(fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [{"error": {"message": "overloaded, sorry"}}])
    fake_llm.push("unused")
    with pytest.raises(ModelError, match="overloaded, sorry"):
        drain()


def test_chunk_that_is_not_an_object_is_model_error(fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [["not", "a", "chunk"]])
    fake_llm.push("unused")
    with pytest.raises(ModelError, match="not an object"):
        drain()


def test_clean_end_without_done_or_finish_reason_is_cut(fake_llm, monkeypatch):
    """A body that ends properly but before the model said it was done is a truncated answer."""
    real = fake_llm.chunks
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: real(reply, model)[:-1])  # no finish_reason
    fake_llm.push({"text": "half an answer", "no_done": True})
    with pytest.raises(ModelUnavailable, match="cut off"):
        drain()


def test_connection_cut_mid_stream_is_model_unavailable(fake_llm):
    fake_llm.push({"text": "one two three four five six seven eight", "cut": True})
    with pytest.raises(ModelUnavailable):
        drain()


def test_http_error_statuses_map_as_before(fake_llm):
    fake_llm.push({"error": 400, "error_message": "context_length_exceeded"})
    with pytest.raises(ModelError, match="context_length_exceeded"):
        drain()
    fake_llm.push({"error": 503, "error_message": "down"}, {"error": 503, "error_message": "down"})  # 1 retry
    with pytest.raises(ModelUnavailable):
        drain()


CONVERSATION = [
    {"role": "system", "content": "You are the bank's assistant."},
    {"role": "user", "content": [{"type": "text", "text": "what is on this receipt?"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "transfer_money", "arguments": '{"amount": 5}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Error: rejected \u2014 \"too much\""},
    {"role": "user", "content": "ünïcode ✓ and a fine \U0001F600"},
]
TOOLS = [{"type": "function", "function": {"name": "transfer_money", "description": "Move money.", "parameters": {
    "type": "object", "properties": {"amount": {"type": "number", "minimum": 0}}, "required": ["amount"]}}}]


def test_the_request_is_the_json_the_sdks_own_create_sends(fake_llm):
    """The conversation rides in extra_body so that the SDK does not walk it: the server must get
    the very JSON (keys, order, values) that create() with messages= and tools= sends."""
    fake_llm.push("one", "two", "three")
    list(OpenAIChatModel().stream(CONVERSATION, TOOLS))
    with OpenAIChatModel()._client().chat.completions.with_streaming_response.create(
            model="fake-model", messages=CONVERSATION, tools=TOOLS, stream=True) as response:
        response.read()
    list(OpenAIChatModel().stream(CONVERSATION[:2], []))  # no tools: no "tools" key, as create() without them
    with OpenAIChatModel()._client().chat.completions.with_streaming_response.create(
            model="fake-model", messages=CONVERSATION[:2], stream=True) as response:
        response.read()
    ours, sdks, ours_bare, sdks_bare = (json.dumps(body) for body in fake_llm.requests)
    assert ours == sdks and ours_bare == sdks_bare
    assert json.loads(ours)["messages"] == CONVERSATION and "tools" not in json.loads(ours_bare)


def test_the_sdks_request_transform_does_not_walk_the_conversation(fake_llm, monkeypatch):
    """Its walk took 48 ms for 100 messages with the GIL held, and changed nothing of a chat request."""
    from openai.resources.chat.completions import completions

    walked = []
    real = completions.maybe_transform
    monkeypatch.setattr(completions, "maybe_transform",
                        lambda data, cls: walked.append((len(data["messages"]), data.get("tools"))) or real(data, cls))
    fake_llm.push("fine")
    list(OpenAIChatModel().stream(CONVERSATION * 20, TOOLS))
    assert len(walked) == 1 and walked[0][0] == 0 and not isinstance(walked[0][1], list)
    assert len(fake_llm.requests[0]["messages"]) == 100


def connections(fake_llm):
    """The TCP connections the fake model has accepted, counted from now."""
    accepted, real = [], fake_llm._server.process_request
    fake_llm._server.process_request = lambda request, address: (accepted.append(address), real(request, address))
    return accepted


def drained():
    """Once this returns, the streams handed to the drainer before it are read and closed (it takes
    them in order)."""
    done, close = threading.Event(), contextlib.ExitStack()
    close.callback(done.set)
    drain_later(iter(()), close)
    assert done.wait(10)


def test_model_calls_reuse_their_connection(fake_llm):
    """A stream closed at its [DONE], before its body's end, closed its connection: every model call
    opened a new one (against the real API, a TCP and a TLS handshake each)."""
    accepted = connections(fake_llm)
    for word in ("one", "two", "three"):
        fake_llm.push(word)
        assert [d.text for d in drain() if isinstance(d, TextDelta)] == [word]
        drained()
    assert len(accepted) == 1 and fake_llm.streams_ended == 3


def test_the_run_does_not_wait_for_a_body_that_goes_on_after_done(fake_llm):
    accepted, gate = connections(fake_llm), threading.Event()
    fake_llm.push({"text": "all of it", "end_after": gate})
    assert "".join(d.text for d in drain() if isinstance(d, TextDelta)) == "all of it"
    assert fake_llm.streams_ended == 0  # the answer is whole and back to the run; its body has not ended
    gate.set()
    drained()
    assert fake_llm.streams_ended == 1
    fake_llm.push("next")
    drain()
    assert len(accepted) == 1  # read to its end off the run's path, the connection served the next call


def reads_of(body, size):
    return [body[i:i + size] for i in range(0, len(body), size)]


def test_sse_data_framing():
    body = b'\n: keep-alive\nevent: message\ndata: {"a":\ndata: 1}\n\nid: 7\ndata:[DONE]\n\n'
    for end in (b"\n", b"\r\n", b"\r"):  # the event stream's three line ends
        for size in range(1, len(body) + 1):  # every way the body can be cut into reads (a CRLF too)
            assert list(sse_data(reads_of(body.replace(b"\n", end), size))) == ['{"a":\n1}', "[DONE]"], (end, size)
    assert list(sse_data([b"data: tail"])) == ["tail"]  # a last event without its blank line
    assert list(sse_data([b"data: tail\r"])) == ["tail"]
    bom = "\ufeff".encode()  # a byte order mark may begin the stream (once: not a later line's)
    for size in range(1, len(body) + 4):
        assert list(sse_data(reads_of(bom + body, size))) == ['{"a":\n1}', "[DONE]"], size
    assert list(sse_data([bom + b"data: x"])) == ["x"]
    assert list(sse_data([b"data: x\n\n" + bom + b"data: y\n\n"])) == ["x"]


def test_sse_data_lines_end_at_cr_and_lf_only():
    """str.splitlines() (the SDK's iter_lines) also ends a line at U+2028, U+2029, U+0085 and a few
    control characters; JSON may hold the first three unescaped in a string."""
    text = "one\u2028two\u2029three\x85four é 😀"
    body = b"data: " + json.dumps({"t": text}, ensure_ascii=False).encode() + b"\n\n"
    for size in range(1, len(body) + 1):  # a character's UTF-8 bytes cut between reads too
        assert [json.loads(d)["t"] for d in sse_data(reads_of(body, size))] == [text]


def test_sse_data_reads_a_long_line_in_small_reads_in_linear_time():
    """A line's pieces are joined once, when it ends: 400,000 one-byte reads of one line (a model
    server sending one byte per chunk) take well under a second, not the ~10^11 bytes copied by
    joining at every read."""
    line = b'data: "' + b"x" * 400_000 + b'"\n\n'
    assert [len(d) for d in sse_data(iter(reads_of(line, 1)))] == [400_002]


def test_unicode_line_separators_in_the_models_text_reach_the_answer(fake_llm):
    """Through the SDK: a server that sends JSON's non-ASCII as UTF-8 put U+2028 inside a data line,
    which the SDK's line iteration cut in two: "not JSON", and the run failed."""
    text = "first\u2028second\u2029third\x85fourth"
    fake_llm.push({"text": text, "raw_unicode": True})
    assert "".join(d.text for d in drain() if isinstance(d, TextDelta)) == text


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_event_streams_with_crlf_or_cr_line_ends(fake_llm, end):
    fake_llm.push({"text": "one two three four", "line_end": end})
    assert "".join(d.text for d in drain() if isinstance(d, TextDelta)) == "one two three four"


@pytest.mark.django_db(transaction=True)
def test_a_lone_surrogate_or_nul_in_the_models_stream_is_replaced_not_stored(demo, fake_llm, monkeypatch):
    """A model can stream "\\ud800" (valid JSON escape, not Unicode): stored, it broke every later
    page, stream and run of the thread. It is replaced by U+FFFD; the rest of the answer is kept."""
    from agents import services
    from agents.models import Message, Thread
    from agents.runtime import runner

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"text": "bad \ud800 text\x00 and a fine \U0001F600"})
    run = services.start_run(thread, demo["alice"], "hi")
    assert runner.run_agent(run.pk)
    reply = Message.objects.filter(thread=thread, role="assistant").get().content
    assert reply == "bad \ufffd text\ufffd and a fine \U0001F600"
    assert run.__class__.objects.get(pk=run.pk).status == "succeeded"


def chunk(delta, finish=None):
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_refusal_is_the_answer_the_person_reads(fake_llm, monkeypatch):
    """OpenAI streams a refusal in `refusal`, content null: it was dropped, and the run ended with
    nothing said."""
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [
        chunk({"role": "assistant", "content": None, "refusal": ""}), chunk({"refusal": "I can't help "}),
        chunk({"refusal": "with that."}), chunk({}, "stop")])
    fake_llm.push("unused")
    assert "".join(d.text for d in drain() if isinstance(d, TextDelta)) == "I can't help with that."


def test_an_empty_answer_is_model_error(fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [
        chunk({"role": "assistant", "content": ""}), chunk({}, "content_filter")])
    fake_llm.push("unused")
    with pytest.raises(ModelError, match=r"empty \(finish reason: content_filter\)"):
        drain()


def test_a_tool_call_cut_at_the_length_limit_is_model_error(fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [
        chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": "lo'}}]}),
        chunk({}, "length")])
    fake_llm.push("unused")
    with pytest.raises(AnswerCut, match="length limit in the middle of a tool call"):
        drain()


def test_text_cut_at_the_length_limit_is_said_after_it(fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [
        chunk({"role": "assistant", "content": "half an"}), chunk({}, "length")])
    fake_llm.push("unused")
    seen = []
    with pytest.raises(AnswerCut, match="^the answer reached the model's length limit$"):
        for delta in OpenAIChatModel().stream([{"role": "user", "content": "hi"}], []):
            seen.append(delta)
    assert seen == [TextDelta("half an")]


def test_content_parts_decoded_arguments_and_calls_without_index(fake_llm, monkeypatch):
    """Shapes OpenAI-compatible servers send that OpenAI does not: content as a list of parts,
    arguments as an object, parallel calls without `index` (each new one has its id). They were
    a TypeError ("failed unexpectedly") or two calls run together as one."""
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [
        chunk({"role": "assistant", "content": [{"type": "text", "text": "Two "}, {"type": "thinking"}]}),
        chunk({"content": [{"type": "text", "text": "lookups."}]}),
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {"x": 1}}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": '{"y"'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": ": 2}"}}]}),
        chunk({}, "tool_calls")])
    fake_llm.push("unused")
    out = drain()
    assert "".join(d.text for d in out if isinstance(d, TextDelta)) == "Two lookups."
    calls = {}
    for d in out:
        if isinstance(d, ToolCallDelta):
            calls.setdefault(d.index, [d.id, d.name, ""])[2] += d.arguments
    assert calls == {0: ["a", "f", '{"x": 1}'], 1: ["b", "g", '{"y": 2}']}


@pytest.mark.parametrize("delta", [{"content": 5}, {"tool_calls": ["call"]}, {"tool_calls": [{"function": "f"}]}])
def test_a_delta_of_the_wrong_shape_is_model_error(fake_llm, monkeypatch, delta):
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [chunk(delta), chunk({}, "stop")])
    fake_llm.push("unused")
    with pytest.raises(ModelError, match="not"):
        drain()
