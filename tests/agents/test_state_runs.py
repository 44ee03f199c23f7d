"""Shared state in runs: predicted deltas while arguments stream, commit / revert as calls settle,
confirmation strategies, the state the model sees. The runner is driven directly (no Celery)."""

import json
from datetime import timedelta

import jsonpatch
import pytest
from django.db import connection
from django.utils import timezone

from agents import services
from agents.llm.scripted.state import CARBONARA
from agents.models import Message, Run, ToolCall
from agents.runtime import runner
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from state import predict
from state import services as state_services
from state.models import StateChange
from tests.conftest import stream_events
from tests.helpers import run_continuation, run_prompt

pytestmark = [pytest.mark.django_db(transaction=True)]
CARBONARA_PROMPT = "I want to make a classic Italian pasta carbonara"


@pytest.fixture(autouse=True)
def quick(monkeypatch, settings):
    """Runs are driven here, not by Celery; no pauses between argument chunks; no throttle."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    monkeypatch.setattr("agents.llm.scripted.state.ARGS_PACE", 0)
    settings.AGUI_STATE_DELTA_INTERVAL = 0


def replay_state(events):
    """Apply every STATE_SNAPSHOT / STATE_DELTA like a client would (each delta against the
    document before it); returns the states after each state event."""
    state, seen = None, []
    for e in events:
        if e["type"] == "STATE_SNAPSHOT":
            state = e["snapshot"]
        elif e["type"] == "STATE_DELTA":
            assert state is not None, "a delta before any snapshot"
            state = jsonpatch.apply_patch(state, e["delta"])  # raises if it does not apply
        else:
            continue
        seen.append((e["type"], state))
    return seen


def of_run(events, run_id):
    start = next(i for i, e in enumerate(events) if e["type"] == "RUN_STARTED" and e["runId"] == run_id)
    end = next(i for i, e in enumerate(events) if i > start and e["type"] in ("RUN_FINISHED", "RUN_ERROR"))
    return events[start:end + 1]


def test_streamed_recipe_predictions_only_grow_and_end_equal_to_the_committed_state(demo):
    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run = run_prompt(thread, alice, CARBONARA_PROMPT)
    assert run.status == Run.Status.SUCCEEDED
    events = of_run(stream_events(thread.pk), run.pk)
    types = [e["type"] for e in events]

    deltas = [e for e in events if e["type"] == "STATE_DELTA"]
    assert len(deltas) > 10
    assert deltas[0]["delta"][0]["op"] == "add"  # the key is new the first time
    assert all(d["delta"][0]["op"] == "replace" and d["delta"][0]["path"] == "/recipe" for d in deltas[1:])
    # predictions arrive while the arguments stream, not after
    assert types.index("TOOL_CALL_ARGS") < types.index("STATE_DELTA") < types.index("TOOL_CALL_END")

    states = replay_state(events)
    predicted = [s["recipe"] for kind, s in states if kind == "STATE_DELTA"]
    for before, after in zip(predicted, predicted[1:], strict=False):
        assert predict.grows(before, after)
    committed, version = state_services.snapshot(thread.state_key)
    assert committed == {"recipe": CARBONARA} and version == 1
    assert predicted[-1] == CARBONARA
    # the tool completed: a snapshot of the committed state, after its result
    assert states[-1] == ("STATE_SNAPSHOT", committed)
    assert types.index("TOOL_CALL_RESULT") < len(types) - 1 - types[::-1].index("STATE_SNAPSHOT")
    meta = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "state_version"]
    call_id = ToolCall.objects.get(thread=thread).pk
    assert [m["value"] for m in meta] == [
        {"version": 0, "provisional": []},  # with the run's first snapshot: the recipe agent declares state
        {"version": 0, "provisional": [{"key": "recipe", "toolCallId": call_id}]},  # the first prediction
        {"version": 1, "provisional": []},  # committed
    ]
    row = StateChange.objects.get(state__key=thread.state_key)
    assert (row.source, row.status, row.ref, row.version) == ("prediction", "committed", call_id, 1)
    assert types[-1] == "RUN_FINISHED"


def test_the_throttle_keeps_a_burst_to_a_few_deltas(demo, settings):
    settings.AGUI_STATE_DELTA_INTERVAL = 60  # longer than the run: the first prediction, then the complete one
    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run = run_prompt(thread, alice, CARBONARA_PROMPT)
    events = of_run(stream_events(thread.pk), run.pk)
    deltas = [e["delta"][0]["value"] for e in events if e["type"] == "STATE_DELTA"]
    assert len(deltas) == 2 and deltas[-1] == CARBONARA and predict.grows(deltas[0], deltas[1])


def test_the_model_sees_the_current_state_and_writes_the_complete_object(demo):
    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run_prompt(thread, alice, CARBONARA_PROMPT)
    model_view = runner.Runner(Run.objects.filter(thread=thread).first()).model_messages()
    system = [m["content"] for m in model_view if m["role"] == "system"]
    assert any(c.startswith("Current shared state (JSON):") and "Classic Pasta Carbonara" in c for c in system)

    run_prompt(thread, alice, "Make it vegetarian")
    recipe = state_services.snapshot(thread.state_key)[0]["recipe"]
    assert "Vegetarian" in recipe["special_preferences"]
    assert len(recipe["ingredients"]) == len(CARBONARA["ingredients"])  # nothing was dropped
    assert not any("guanciale" in i["name"].lower() for i in recipe["ingredients"])
    assert state_services.snapshot(thread.state_key)[1] == 2


def _paused_writer(demo):
    alice = demo["alice"]
    thread = services.create_thread(alice, "writer")
    run = run_prompt(thread, alice, "Write a short document about remote work")
    assert run.status == Run.Status.INTERRUPTED
    return alice, thread, run, ApprovalRequest.objects.get(run_ref=run.pk)


def test_a_gated_prediction_stays_provisional_while_waiting(demo):
    alice, thread, run, request = _paused_writer(demo)
    doc = state_services.document(thread.state_key)
    assert doc.data == {} and doc.version == 0
    assert doc.view["document"]["title"] == "Remote work"  # the user sees the draft while waiting
    assert doc.provisional == {"document": request.tool_call_ref}
    events = of_run(stream_events(thread.pk), run.pk)
    states = replay_state(events)
    assert states[-1][1] == doc.view
    assert events[-1]["outcome"]["type"] == "interrupt"


def test_reject_reverts_to_the_last_committed_state(demo):
    alice, thread, run, request = _paused_writer(demo)
    approval_services.decide(request.pk, alice, "reject", feedback="not now")
    cont = run_continuation(run)
    assert cont.status == Run.Status.SUCCEEDED
    assert state_services.view(thread.state_key) == ({}, 0)
    assert StateChange.objects.get(state__key=thread.state_key).status == "reverted"
    events = of_run(stream_events(thread.pk), cont.pk)
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots[0]["document"]["title"] == "Remote work" and snapshots[-1] == {}
    # the writer's confirmation strategy answers, not another model turn
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "No problem! I discarded the draft. What should I change about the document?"
    assert Message.objects.filter(thread=thread, role="assistant").last().content == text


def test_approve_with_edits_commits_the_edited_arguments(demo):
    alice, thread, run, request = _paused_writer(demo)
    edited = {**request.arguments, "title": "Working from anywhere"}
    approval_services.decide(request.pk, alice, "approve", arguments=edited)
    cont = run_continuation(run)
    data, version = state_services.snapshot(thread.state_key)
    assert version == 1 and data == {"document": edited}
    events = of_run(stream_events(thread.pk), cont.pk)
    assert replay_state(events)[-1] == ("STATE_SNAPSHOT", {"document": edited})
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "The document is saved."  # it said "your edits are applied" whether or not there were any


def test_the_confirmation_is_said_in_the_chat_owners_language(demo):
    """The strategies' sentences were English whatever the person spoke."""
    from people.models import Profile

    alice, thread, run, request = _paused_writer(demo)
    Profile.objects.update_or_create(user=alice, defaults={"language": "fr"})
    approval_services.decide(request.pk, alice, "approve")
    cont = run_continuation(run)
    assert Message.objects.filter(run=cont, role="assistant").last().content == "Le document est enregistré."


def test_expiry_reverts_the_prediction(demo):
    alice, thread, run, request = _paused_writer(demo)
    ApprovalRequest.objects.filter(pk=request.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert approval_services.expire(request.pk)
    run_continuation(run)
    assert state_services.view(thread.state_key) == ({}, 0)


def test_planner_steps_need_confirmation_and_the_strategy_lists_them(demo):
    alice = demo["alice"]
    thread = services.create_thread(alice, "planner")
    run = run_prompt(thread, alice, "Plan a birthday party")
    request = ApprovalRequest.objects.get(run_ref=run.pk)
    assert request.approver_kind == "requester"
    assert state_services.snapshot(thread.state_key) == ({}, 0)
    approval_services.decide(request.pk, alice, "approve")
    cont = run_continuation(run)
    steps = state_services.snapshot(thread.state_key)[0]["steps"]
    assert [s["description"] for s in steps][:2] == ["Pick a date and make a guest list", "Book or prepare the venue"]
    reply = Message.objects.filter(run=cont, role="assistant").last().content
    assert reply.startswith("Here is your confirmed plan:") and "1. Pick a date" in reply and "5. " in reply

    # preferences are a second state key, written without confirmation
    run_prompt(thread, alice, "I prefer short tasks in the morning")
    data, version = state_services.snapshot(thread.state_key)
    assert data["preferences"] == {"likes": ["short tasks in the morning"]} and len(data["steps"]) == 5
    assert version == 2


def test_arguments_the_tool_refuses_revert_the_prediction(demo, fake_llm):
    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    bad = {**CARBONARA, "cooking_time": "3 hours"}
    fake_llm.push({"text": "Here.", "tool_calls": [{"id": "call_bad", "name": "update_recipe",
                                                     "arguments": json.dumps({"recipe": bad})}]})
    run = run_prompt(thread, alice, CARBONARA_PROMPT)
    assert ToolCall.objects.get(pk="call_bad").status == ToolCall.Status.INVALID
    assert state_services.view(thread.state_key) == ({}, 0)
    states = replay_state(of_run(stream_events(thread.pk), run.pk))
    assert any(s.get("recipe", {}).get("cooking_time") == "3 hours" for _k, s in states)  # it was predicted
    assert states[-1] == ("STATE_SNAPSHOT", {})  # and taken back


def test_the_state_schema_is_checked_before_the_tool_runs(demo, fake_llm, monkeypatch):
    from agents.catalog.recipe import AGENT

    strict = json.loads(json.dumps(AGENT.state_schema))
    strict["properties"]["recipe"]["properties"]["title"]["maxLength"] = 5
    monkeypatch.setattr(AGENT, "state_schema", strict)
    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run_prompt(thread, alice, CARBONARA_PROMPT)
    call = ToolCall.objects.get(thread=thread)
    assert call.status == ToolCall.Status.FAILED
    assert "the new state was refused" in call.result and "/recipe/title" in call.result
    assert state_services.view(thread.state_key) == ({}, 0)


def test_a_persons_edit_made_while_the_model_answers_is_not_overwritten(demo, fake_llm):
    """The model read version 1; a person renames the recipe while it writes its update from what it
    read. Applying that update would undo the rename unseen: the call fails instead, saying what
    changed, and the model's next turn (which reads the current state) makes its change again."""
    from agents.runtime import statesync
    from tests.fake_llm import default_responder

    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run_prompt(thread, alice, CARBONARA_PROMPT)
    requests = []

    def reply(body):
        requests.append(body)
        if len(requests) == 1:  # the person's edit lands after the model was given version 1
            try:
                statesync.apply_user_patch(thread, alice, [
                    {"op": "replace", "path": "/recipe/title", "value": "Carbonara for two"}], base_version=1)
            finally:
                connection.close()  # this is the fake server's thread: leave no connection behind
        if len(requests) == 2:  # a real model retries from the state it now reads; the demo one
            # would answer the error: it is asked the user's request again, on the current state
            last_user = max(i for i, m in enumerate(body["messages"]) if m["role"] == "user")
            body = {**body, "messages": body["messages"][:last_user + 1]}
        if len(requests) <= 2:
            return default_responder(body)  # the demo model: make the recipe vegetarian
        return {"text": "Done: vegetarian, and still called what you named it."}

    fake_llm.responder = reply
    run = run_prompt(thread, alice, "Make it vegetarian")
    assert run.status == Run.Status.SUCCEEDED

    first, second = ToolCall.objects.filter(run=run).order_by("created_at")
    assert first.status == ToolCall.Status.FAILED
    assert "a person edited recipe" in first.result
    assert "Nothing was changed and their edit stands" in first.result
    # the model's next turn read the renamed recipe, and its retry kept the name
    assert "Carbonara for two" in next(m["content"] for m in requests[1]["messages"] if m["role"] == "system"
                                       and m["content"].startswith("Current shared state"))
    assert second.status == ToolCall.Status.SUCCEEDED
    recipe, version = state_services.snapshot(thread.state_key)
    assert recipe["recipe"]["title"] == "Carbonara for two"
    assert "Vegetarian" in recipe["recipe"]["special_preferences"]
    assert version == 3  # the rename, then the retried update; the refused one changed nothing
    states = replay_state(of_run(stream_events(thread.pk), run.pk))
    assert states[-1] == ("STATE_SNAPSHOT", recipe)  # clients end on the committed state


def test_edits_of_other_keys_or_before_the_read_do_not_refuse_a_write(demo, fake_llm):
    """Only what a person changed after the model's read, in the keys the call writes, refuses it."""
    from agents.runtime import statesync

    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run_prompt(thread, alice, CARBONARA_PROMPT)
    statesync.apply_user_patch(thread, alice, [
        {"op": "replace", "path": "/recipe/title", "value": "Renamed before the run"}], base_version=1)
    run = run_prompt(thread, alice, "Make it vegetarian")
    assert run.status == Run.Status.SUCCEEDED
    assert ToolCall.objects.get(run=run).status == ToolCall.Status.SUCCEEDED
    recipe = state_services.snapshot(thread.state_key)[0]["recipe"]
    assert recipe["title"] == "Renamed before the run" and "Vegetarian" in recipe["special_preferences"]


def test_a_prediction_that_outgrows_the_state_limit_is_shown_no_further(demo, settings):
    """Only a prediction's first values were checked: the model's streaming arguments then went to
    every client past the state's size limit, a delta of the whole growing value each time. Now
    they stop at the limit, the call is refused as it would commit too much, and what was shown
    is reverted."""
    settings.AGUI_STATE_MAX_BYTES = 400  # the carbonara recipe is larger
    alice = demo["alice"]
    thread = services.create_thread(alice, "recipe")
    run = run_prompt(thread, alice, CARBONARA_PROMPT)
    events = of_run(stream_events(thread.pk), run.pk)
    deltas = [e for e in events if e["type"] == "STATE_DELTA"]
    assert deltas and all(state_services.size_of(d["delta"][0]["value"]) <= 400 for d in deltas)
    assert ToolCall.objects.get(thread=thread).status == ToolCall.Status.FAILED
    assert state_services.snapshot(thread.state_key) == ({}, 0)
    assert replay_state(events)[-1] == ("STATE_SNAPSHOT", {})  # what was shown is taken back
    assert run.status == Run.Status.SUCCEEDED  # the model read why and answered
