"""What a model answers that nobody expected (ids it reuses, refusals, answers cut short), and what
its tools give back (bytes no database stores): the run ends properly, the person reads what
happened, and the model's next turn is a valid conversation."""

import json

import pytest

from agents import services
from agents.models import Message, Run, Thread, ToolCall
from agents.runtime import runner
from tests.conftest import stream_events

pytestmark = [pytest.mark.django_db(transaction=True)]

BALANCE = json.dumps({"account": "1234567890"})


@pytest.fixture
def start(demo, monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)

    def start(user="alice", text="What is my balance?", agent="banking"):
        thread = Thread.objects.create(owner=demo[user], agent=agent)
        return thread, services.start_run(thread, demo[user], text)

    return start


def test_a_model_that_numbers_its_calls_the_same_every_turn_runs_in_every_thread(start, fake_llm):
    """Servers that number calls (`call_0` each answer) gave a second thread's call an id the first
    had stored: the insert failed and the run with it ("failed unexpectedly"). The second call is
    stored and announced under an id of its own, which its result and the model's history use."""
    thread, run = start()
    fake_llm.push({"tool_calls": [{"id": "call_0", "name": "check_balance", "arguments": BALANCE}]}, "You have money.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED

    other, again = start()  # the same user's second chat (another user's works the same way)
    fake_llm.push({"tool_calls": [{"id": "call_0", "name": "check_balance", "arguments": BALANCE}]}, "Still there.")
    assert runner.run_agent(again.pk)
    assert Run.objects.get(pk=again.pk).status == Run.Status.SUCCEEDED
    call = ToolCall.objects.get(thread=other)
    assert call.pk != "call_0" and call.status == ToolCall.Status.SUCCEEDED
    assert ToolCall.objects.get(pk="call_0").thread_id == thread.pk  # the first thread's call untouched
    said = fake_llm.requests[-1]["messages"]
    assert [c["id"] for c in said[-2]["tool_calls"]] == [call.pk] and said[-1]["tool_call_id"] == call.pk
    assert list(other.messages.values_list("role", "content")) == [
        ("user", "What is my balance?"), ("assistant", ""), ("tool", "Account 1234567890 holds 5432.10 USD."),
        ("assistant", "Still there.")]


def test_two_calls_of_one_answer_under_one_id_both_run(start, fake_llm):
    thread, run = start()
    twice = [{"id": "dup", "name": "check_balance", "arguments": BALANCE},
             {"id": "dup", "name": "check_balance", "arguments": BALANCE}]
    fake_llm.push({"tool_calls": twice}, "Twice the same.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    ids = list(ToolCall.objects.filter(thread=thread).order_by("created_at").values_list("pk", flat=True))
    assert len(set(ids)) == 2 and ids[0] == "dup"
    assert thread.messages.filter(role=Message.Role.TOOL).count() == 2


@pytest.mark.parametrize("given", ["c" * 300, "call\u0000x", 7])
def test_a_call_id_that_cannot_be_stored_gets_one_that_can(start, fake_llm, monkeypatch, given):
    """Too long for the column, a NUL PostgreSQL refuses, a number (servers that count their calls):
    the insert failed, or the runner did, and the run 'unexpectedly'."""
    thread, run = start()
    real = fake_llm.chunks

    def with_id(reply, model):
        out = real(reply, model)
        for chunk in out:
            for tc in chunk["choices"][0]["delta"].get("tool_calls") or [] if chunk["choices"] else []:
                if "id" in tc:
                    tc["id"] = given
        return out

    monkeypatch.setattr(fake_llm, "chunks", with_id)
    fake_llm.push({"tool_calls": [{"id": "placeholder", "name": "check_balance", "arguments": BALANCE}]}, "Fine.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    stored = ToolCall.objects.get(thread=thread).pk
    assert stored.startswith("call_") and len(stored) <= 200 and "\x00" not in stored


def test_a_tool_name_longer_than_a_row_holds_is_told_as_no_such_tool(start, fake_llm):
    """A hallucinated name of 150 characters failed the call's insert (PostgreSQL: the column holds
    100) and the run 'unexpectedly'."""
    thread, run = start()
    fake_llm.push({"tool_calls": [{"id": "long", "name": "n" * 150, "arguments": "{}"}]}, "Sorry.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    call = ToolCall.objects.get(pk="long")
    assert (call.name, call.status) == ("n" * 100, ToolCall.Status.INVALID)
    told = thread.messages.get(role=Message.Role.TOOL).content
    assert told == f"Error: there is no tool named {'n' * 100!r}."


def chunk(delta, finish=None):
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def answered(run, fake_llm, monkeypatch, *chunks):
    """`run` run on a model whose one answer streams `chunks` (raw chunks, any shape); the run as it ended."""
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: list(chunks))
    fake_llm.push("unused")
    assert runner.run_agent(run.pk)
    return Run.objects.get(pk=run.pk)


def test_a_refusal_is_said_and_kept(start, fake_llm, monkeypatch):
    thread, run = start()
    run = answered(run, fake_llm, monkeypatch,
                   chunk({"role": "assistant", "content": None, "refusal": "I can't help with that."}), chunk({}, "stop"))
    assert run.status == Run.Status.SUCCEEDED
    assert thread.messages.filter(role=Message.Role.ASSISTANT).get().content == "I can't help with that."


def test_an_empty_answer_ends_the_run_saying_so(start, fake_llm, monkeypatch):
    """It ended `succeeded` with nothing to read: the chat showed no answer and no error."""
    thread, run = start()
    run = answered(run, fake_llm, monkeypatch, chunk({"role": "assistant", "content": ""}), chunk({}, "stop"))
    assert (run.status, run.error_code) == (Run.Status.FAILED, "model_error")
    # the person's words, not the adapter's English with its finish reason (a French chat read it so)
    assert run.error == ("The model ended its turn without an answer (its provider may have withheld it). "
                         "Retry, or put your request another way.")


def test_a_stream_that_holds_no_answer_ends_the_run_without_quoting_it(start, fake_llm, monkeypatch):
    """The chat read "The model returned an error: the model's stream held a chunk that is not an
    object: '[1]'": the adapter's English and the raw chunk, on a page in any language."""
    thread, run = start()
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [[1]])
    fake_llm.push("unused")
    assert runner.run_agent(run.pk)
    run = Run.objects.get(pk=run.pk)
    assert (run.status, run.error_code) == (Run.Status.FAILED, "model_error")
    assert run.error == "The model's server sent something that is not an answer, so the run stopped. Try again in a moment."


def test_a_transfer_cut_at_the_length_limit_is_not_made(start, fake_llm, monkeypatch):
    """Cut where the tokens ran out, the call's arguments were given to the model as 'not valid
    JSON', and it tried again with as many tokens, turn after turn; the person was told nothing."""
    thread, run = start(text="Send 500 to 0987654321")
    run = answered(run, fake_llm, monkeypatch, chunk({"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "cut", "type": "function",
         "function": {"name": "transfer_money", "arguments": '{"from_account": "1234567890", "to_acc'}}]}),
        chunk({}, "length"))
    assert (run.status, run.error_code) == (Run.Status.FAILED, "answer_cut") and "length limit" in run.error
    assert not ToolCall.objects.filter(thread=thread).exists() and len(fake_llm.requests) == 1
    # the call stays open under the RUN_ERROR: an END said its cut arguments were complete (ag-ui-validate:
    # AGUI204), and the official client handed the call to its subscribers, its arguments read as {}
    told = [e["type"] for e in stream_events(thread.pk) if e["type"].startswith(("TOOL_CALL", "RUN_"))]
    assert told == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "RUN_ERROR"], told


def test_an_answer_cut_at_the_length_limit_is_kept_and_said(start, fake_llm, monkeypatch):
    """It ended `succeeded` mid-sentence and nobody was told. The text stays, the run says it was
    cut, and a retry (on the same history) lets the model go on."""
    thread, run = start()
    run = answered(run, fake_llm, monkeypatch, chunk({"role": "assistant", "content": "Your balance is 5,4"}),
                   chunk({}, "length"))
    assert (run.status, run.error_code) == (Run.Status.FAILED, "answer_cut")
    assert run.error == ("The model's answer reached its length limit and was cut off; nothing it was about to call "
                         "was run. Retry to let it go on.")
    assert thread.messages.get(role=Message.Role.ASSISTANT).content == "Your balance is 5,4"


def test_a_model_still_calling_tools_when_the_turns_run_out_ends_the_run_saying_so(start, fake_llm, settings):
    """The loop gave up after AGUI_MAX_TURNS and ended the run `succeeded` with no answer: the
    person read a row of tool results and nothing after them. A retry goes on from the results."""
    settings.AGUI_MAX_TURNS = 2
    thread, run = start()
    for i in range(2):
        fake_llm.push({"tool_calls": [{"id": f"again-{i}", "name": "check_balance", "arguments": BALANCE}]})
    assert runner.run_agent(run.pk)
    run = Run.objects.get(pk=run.pk)
    assert (run.status, run.error_code) == (Run.Status.FAILED, "turn_limit")
    assert run.error == "The agent took 2 steps without finishing its answer, so the run stopped. Retry to let it go on."
    assert ToolCall.objects.filter(thread=thread, status=ToolCall.Status.SUCCEEDED).count() == 2

    retry = services.start_run(thread, thread.owner)  # what the chat's Retry does (api.RunViewSet.retry)
    fake_llm.push("You have 5432.10 USD.")
    assert runner.run_agent(retry.pk)
    assert Run.objects.get(pk=retry.pk).status == Run.Status.SUCCEEDED
    assert [m["role"] for m in fake_llm.requests[-1]["messages"][1:]] == [
        "user", "assistant", "tool", "assistant", "tool"]  # the results it had, not the calls again


def test_a_tool_result_with_a_nul_byte_is_stored_and_told(start, fake_llm, settings, tmp_path):
    """read_file of a binary file gave text with a NUL: PostgreSQL refused the result's write, the run
    failed 'unexpectedly' and the call was left executing (recovery then called it lost)."""
    settings.AGUI_SANDBOX_DIR = tmp_path
    thread, run = start(agent="ops", text="Read /blob.bin")
    home = tmp_path / "users" / str(thread.owner_id)
    home.mkdir(parents=True)
    (home / "blob.bin").write_bytes(b"ab\x00cd")
    fake_llm.push({"tool_calls": [{"id": "read-blob", "name": "read_file", "arguments": json.dumps({"path": "/blob.bin"})}]},
                  "It is binary.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    call = ToolCall.objects.get(pk="read-blob")
    assert (call.status, call.result) == (ToolCall.Status.SUCCEEDED, "ab\ufffdcd")
    assert thread.messages.get(role=Message.Role.TOOL).content == "ab\ufffdcd"


def test_a_model_error_quoting_a_nul_ends_the_run(start, fake_llm):
    """The run's error quoted the model's server: a NUL in it failed the failed run's write on
    PostgreSQL, and the run was left running until recovery called its worker lost."""
    thread, run = start()
    fake_llm.push({"error": 400, "error_message": "bad\u0000request"})
    assert runner.run_agent(run.pk)
    run = Run.objects.get(pk=run.pk)
    assert (run.status, run.error_code) == (Run.Status.FAILED, "model_error")
    assert "bad" not in run.error  # the provider's text is the logs'


@pytest.mark.parametrize(("status", "code", "said", "level"), [
    (401, None, "The model's provider refused this server's credentials, so the run stopped. An administrator needs "
                "to check the model settings.", "ERROR"),
    (404, "model_not_found", "The model this agent uses was not found at its provider, so the run stopped. An "
                             "administrator needs to check the model settings.", "ERROR"),
    (400, "context_length_exceeded", "The conversation is too long for the model, so the run stopped. Start a new "
                                     "chat, or ask for less at once.", "WARNING"),
    (400, "content_filter", "The model's provider declined this request under its content rules. Put your request "
                            "another way.", "WARNING"),
    (422, None, "The model's provider refused the request, so the run stopped. Retry, or put your request another "
                "way.", "WARNING"),
])
def test_a_model_error_is_told_in_a_sentence_for_the_person_and_quoted_to_the_logs(start, fake_llm, caplog, status,
                                                                                   code, said, level):
    """The chat read the provider's own text: "The model returned an error: Error code: 401 - {'error':
    {'message': 'Incorrect API key provided: sk-proj-****wxyz', ...}}", its JSON and the tail of the
    server's key, in English on a page in any language."""
    thread, run = start()
    raw = "Incorrect API key provided: sk-proj-****wxyz" if status == 401 else "the provider's own words"
    fake_llm.push({"error": status, "error_message": raw, "error_code": code})
    assert runner.run_agent(run.pk)
    run = Run.objects.get(pk=run.pk)
    assert (run.status, run.error_code, run.error) == (Run.Status.FAILED, "model_error", said)
    ended = [e for e in stream_events(thread.pk) if e["type"] == "RUN_ERROR"]
    assert [(e["code"], e["message"]) for e in ended] == [("model_error", said)]
    logged = [r for r in caplog.records if raw in r.getMessage()]
    assert [r.levelname for r in logged] == [level]  # the operators' to mend: an error their mail hears of


@pytest.mark.parametrize("arguments", ['{"colour": "gold"', '["gold"]', '{"n": NaN}'])
def test_a_frontend_tool_call_with_arguments_that_are_no_object_is_told_to_the_model(start, fake_llm, arguments):
    """A frontend tool was handed to the client whatever its arguments: the official client reads {}
    from text that does not parse, so the page ran its tool without them. The model is told, as
    for the agent's own tools, and answers again."""
    thread, run = start(text="celebrate")
    Run.objects.filter(pk=run.pk).update(client_tools=[{"name": "show_confetti", "description": "Celebrate"}])
    fake_llm.push({"tool_calls": [{"id": "confetti", "name": "show_confetti", "arguments": arguments}]}, "Sorry, no confetti.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    assert ToolCall.objects.get(pk="confetti").status == ToolCall.Status.INVALID
    told = thread.messages.get(role=Message.Role.TOOL).content
    assert told.startswith("Error: ") and "nothing was executed" in told
    assert thread.messages.filter(role=Message.Role.ASSISTANT).last().content == "Sorry, no confetti."
    # the client heard nothing of it: its START/ARGS/END reached it, and a page that runs its tools as
    # their calls complete ran it with {} (the official client's onNewToolCall)
    assert not [e for e in stream_events(thread.pk) if e["type"].startswith("TOOL_CALL")]


def test_a_frontend_tool_call_with_an_object_goes_to_the_client(start, fake_llm):
    thread, run = start(text="celebrate")
    Run.objects.filter(pk=run.pk).update(client_tools=[{"name": "show_confetti", "description": "Celebrate"}])
    fake_llm.push({"tool_calls": [{"id": "confetti", "name": "show_confetti", "arguments": '{"colour": "gold"}'}]})
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    assert ToolCall.objects.get(pk="confetti").status == ToolCall.Status.CLIENT
    # announced once whole: START, the whole arguments, END
    told = [(e["type"], e.get("delta")) for e in stream_events(thread.pk) if e["type"].startswith("TOOL_CALL")]
    assert told == [("TOOL_CALL_START", None), ("TOOL_CALL_ARGS", '{"colour": "gold"}'), ("TOOL_CALL_END", None)]


def test_a_frontend_tool_call_cut_at_the_length_limit_is_never_announced(start, fake_llm, monkeypatch):
    """Cut mid-call, the client had heard the call start: Agent Framework's client then fails the whole
    response at the RUN_ERROR ("invalidated partial output containing a local client tool call"), so
    the person read an exception instead of the sentence saying the answer was cut."""
    thread, run = start(text="celebrate")
    Run.objects.filter(pk=run.pk).update(client_tools=[{"name": "show_confetti", "description": "Celebrate"}])
    fake_llm.push({"text": "Here we go", "finish": "length",
                   "tool_calls": [{"id": "confetti", "name": "show_confetti", "arguments": '{"colour": "go'}]})
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).error_code == "answer_cut"
    told = [e["type"] for e in stream_events(thread.pk) if e["type"].startswith(("TOOL_CALL", "RUN_"))]
    assert told == ["RUN_STARTED", "RUN_ERROR"], told


def test_calls_past_the_most_one_answer_makes_are_answered_not_made(start, fake_llm, settings):
    """A model (or a page it read) asking for 20 transfers at once filed 20 approval requests into
    the reviewers' inbox; an answer makes at most AGUI_MAX_TOOL_CALLS_PER_ANSWER calls and the
    model is told the rest were not executed."""
    settings.AGUI_MAX_TOOL_CALLS_PER_ANSWER = 3
    thread, run = start()
    transfer = json.dumps({"from_account": "1234567890", "to_account": "0987654321", "amount": 5000, "currency": "USD"})
    fake_llm.push({"tool_calls": [{"id": f"t-{i}", "name": "transfer_money", "arguments": transfer} for i in range(5)]})
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.INTERRUPTED
    calls = {c.pk: c.status for c in ToolCall.objects.filter(thread=thread)}
    assert calls == {"t-0": "awaiting_approval", "t-1": "awaiting_approval", "t-2": "awaiting_approval",
                     "t-3": "invalid", "t-4": "invalid"}
    told = dict(thread.messages.filter(role=Message.Role.TOOL).values_list("tool_call_id", "content"))
    assert set(told) == {"t-3", "t-4"} and all("at most 3 tool calls" in t for t in told.values())


def test_a_frontend_call_past_the_most_one_answer_makes_is_never_announced(start, fake_llm, settings):
    """Held until whole, a frontend call past the limit was answered (a TOOL_CALL_RESULT) though its
    START never went out: a result for a call the client never heard of."""
    settings.AGUI_MAX_TOOL_CALLS_PER_ANSWER = 1
    thread, run = start(text="celebrate twice")
    Run.objects.filter(pk=run.pk).update(client_tools=[{"name": "show_confetti", "description": "Celebrate"}])
    fake_llm.push({"tool_calls": [{"id": f"confetti-{i}", "name": "show_confetti", "arguments": "{}"} for i in (1, 2)]})
    assert runner.run_agent(run.pk)
    assert ToolCall.objects.get(pk="confetti-2").status == ToolCall.Status.INVALID
    told = [(e["type"], e.get("toolCallId")) for e in stream_events(thread.pk) if e["type"].startswith("TOOL_CALL")]
    assert told == [("TOOL_CALL_START", "confetti-1"), ("TOOL_CALL_ARGS", "confetti-1"), ("TOOL_CALL_END", "confetti-1")]
