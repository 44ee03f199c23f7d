"""Multi-agent workflows (agents/runtime/workflows.py): handoffs, steps, asking the person, approvals inside
an agent, continuations that resume from saved state, the support demo.

The full path runs on the live worker with the fake OpenAI-compatible model (its default script
is the offline demo model's, agents/llm/scripted/support.py), driven through POST /agui/support/ like
an AG-UI client; the smaller cases drive the runner directly (no Celery) for speed.
"""

import json
import uuid

import pytest
from asgiref.sync import async_to_sync
from rest_framework.authtoken.models import Token

from agents import services
from agents.catalog import get_agent
from agents.catalog.agent import Agent
from agents.catalog.models import Order, OrderAction
from agents.models import InputRequest, Run, ToolCall, WorkflowInstance
from agents.runtime.workflows import Handoff, Workflow, ends_with_case_complete
from tests.agents.test_agui import run_input, user_msg
from tests.conftest import stream_events, wait_for_event
from tests.helpers import run_continuation, run_prompt

REFUND_PROMPT = "My wireless headphones arrived broken. I'd like a refund."
SECRET = "zebra-ticket-42"


# --- helpers --------------------------------------------------------------------------------

async def _collect(content):
    return b"".join([chunk async for chunk in content])


def sse(client, token, body, agent="support"):
    resp = client.post(f"/agui/{agent}/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 200, resp.content
    raw = async_to_sync(_collect)(resp.streaming_content).decode()
    return [json.loads(f[len("data: "):]) for f in raw.split("\n\n") if f.startswith("data: ")]


def of_run(events, run_id):
    start = next(i for i, e in enumerate(events) if e["type"] == "RUN_STARTED" and e["runId"] == run_id)
    end = next(i for i, e in enumerate(events) if i > start and e["type"] in ("RUN_FINISHED", "RUN_ERROR"))
    return events[start:end + 1]


def steps_of(events):
    """The run's steps in order; asserts they are paired, not nested, and closed before the run ends
    (what @ag-ui/client's verifier insists on)."""
    names, open_ = [], None
    for e in events:
        if e["type"] == "STEP_STARTED":
            assert open_ is None, f"step {e['stepName']} opened inside {open_}"
            open_ = e["stepName"]
            names.append(open_)
        elif e["type"] == "STEP_FINISHED":
            assert open_ == e["stepName"], f"STEP_FINISHED {e['stepName']} without its STEP_STARTED"
            open_ = None
        elif e["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            assert open_ is None, f"{e['type']} while step {open_} is open"
    return names


def custom(events, name):
    return [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == name]


def model_turns(fake_llm):
    """(agent, request) for each model request, the agent read from its system prompt."""
    out = []
    for req in fake_llm.requests:
        system = req["messages"][0]["content"]
        agent = next((a for a in ("triage_agent", "refund_agent", "order_agent") if f"You are {a}" in system), None)
        out.append((agent, req))
    return out


def tool_names(request):
    return {t["function"]["name"] for t in request.get("tools") or []}


@pytest.fixture
def token(demo):
    return Token.objects.get_or_create(user=demo["alice"])[0].key


# --- the whole path, live worker --------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_refund_handoff_question_and_approval_end_to_end(celery_worker_live, fake_llm, client, token, api):
    thread_id = f"thread-{uuid.uuid4()}"
    # 1. triage hands off; refund_agent asks for the order number: the run pauses on input_required
    first = sse(client, token, run_input(thread_id, [user_msg(REFUND_PROMPT)],
                                         forwardedProps={"ticket": SECRET, "channel": "web"}))
    assert first[0]["type"] == "RUN_STARTED" and first[-1]["type"] == "RUN_FINISHED"
    assert steps_of(first) == ["triage_agent", "refund_agent"]
    assert custom(first, "status")[0] == {"state": "in_progress"}
    assert custom(first, "status")[-1] == {"state": "idle_with_pending_requests"}
    handoff = next(e for e in first if e["type"] == "TOOL_CALL_START")
    assert handoff["toolCallName"] == "handoff_to_refund_agent"
    assert [o["agent"] for o in custom(first, "workflow_output")] == ["triage_agent", "refund_agent"]
    assert {o["type"] for o in custom(first, "workflow_output")} == {"intermediate"}
    [asked] = custom(first, "request_info")
    [interrupt] = first[-1]["outcome"]["interrupts"]
    assert first[-1]["outcome"]["type"] == "interrupt"
    assert interrupt["reason"] == "input_required" and interrupt["id"] == asked["requestId"]
    assert interrupt["message"] == "What is the number of the order you want refunded?"
    assert interrupt["responseSchema"]["required"] == ["order_id"]
    assert interrupt["metadata"]["agent"] == "refund_agent"
    assert Run.objects.get(pk=first[0]["runId"]).forwarded_props == {"ticket": SECRET, "channel": "web"}
    instance = WorkflowInstance.objects.get(thread_id=thread_id)
    assert instance.active_agent == "refund_agent" and instance.status == "idle_with_pending_requests"
    assert [p["agent"] for p in instance.path] == ["triage_agent", "refund_agent"]
    assert instance.task == REFUND_PROMPT

    # a new message while the question is open is refused; an answer the schema refuses changes nothing
    refused = sse(client, token, run_input(thread_id, [user_msg("hello?")]))
    assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"] and refused[-1]["code"] == "interrupt_pending"
    bad = sse(client, token, run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"order_id": "my headphones"}}]))
    assert [e["type"] for e in bad] == ["RUN_STARTED", "RUN_ERROR"] and bad[-1]["code"] == "invalid_payload"
    assert InputRequest.objects.get(pk=interrupt["id"]).status == "pending"

    # 2. the answer reaches the model as the tool's result; lookup runs, submit_refund pauses for `support`
    second_id = f"run-{uuid.uuid4()}"
    second = sse(client, token, run_input(thread_id, run_id=second_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"order_id": "12345"}}]))
    assert second[0]["runId"] == second_id and second[0]["parentRunId"] == first[0]["runId"]
    assert steps_of(second) == ["refund_agent"]  # the same agent, the same step: no triage again
    answer = next(e for e in second if e["type"] == "TOOL_CALL_RESULT")
    assert answer["toolCallId"] == interrupt["toolCallId"]
    assert answer["content"] == 'The person answered: {"order_id": "12345"}'
    assert "outcome" not in second[-1]  # support decides: no interrupt for the requester to answer
    [status] = custom(second, "approval_status")
    assert status["toolCallName"] == "submit_refund" and status["approver"] == {"kind": "group", "group": "support"}
    approval = {"id": status["approvalId"]}
    calls = [e["toolCallName"] for e in second if e["type"] == "TOOL_CALL_START"]
    assert calls == ["lookup_order_details", "submit_refund"]

    # 3. rita (support) approves in the inbox: the workflow resumes in refund_agent and completes
    decided = api("rita").post(f"/api/approvals/{approval['id']}/decide/", {"decision": "approve"}, format="json")
    assert decided.status_code == 200, decided.content
    # the worker continues the run (agents.tasks.continue_decided): its RUN_STARTED names the paused run
    started, _ = wait_for_event(thread_id, lambda e: e["type"] == "RUN_STARTED" and e.get("parentRunId") == second_id)
    third_run = Run.objects.get(parent_run_id=second_id)
    assert started["runId"] == third_run.pk
    wait_for_event(thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e.get("runId") == third_run.pk)
    third = of_run(stream_events(thread_id), third_run.pk)
    assert third[-1]["type"] == "RUN_FINISHED" and "outcome" not in third[-1]
    assert steps_of(third) == ["refund_agent"]
    assert custom(third, "workflow_output")[-1]["type"] == "output"
    assert custom(third, "workflow_output")[-1]["text"].endswith("Case complete.")
    assert custom(third, "status")[-1] == {"state": "completed"}

    # --- the database: one refund, done once, by the tool that saw the forwarded props
    action = OrderAction.objects.get()
    assert action.kind == "refund" and action.order.number == "12345" and str(action.amount) == "129.99"
    assert action.client_context == {"ticket": SECRET, "channel": "web"}
    assert Order.objects.get(number="12345").status == "refunded"
    instance.refresh_from_db()
    assert instance.status == "completed" and instance.output.endswith("Case complete.")
    assert [p["agent"] for p in instance.path] == ["triage_agent", "refund_agent"]
    assert instance.agent_state["triage_agent"]["status"] == "handed_off"
    assert instance.agent_state["refund_agent"]["turns"] == 4
    names = list(ToolCall.objects.filter(thread_id=thread_id).order_by("created_at").values_list("name", flat=True))
    assert names == ["handoff_to_refund_agent", "request_info", "lookup_order_details", "submit_refund"]
    assert set(ToolCall.objects.filter(thread_id=thread_id).values_list("status", flat=True)) == {"succeeded"}

    # --- the model: never the forwarded props; each agent with its own prompt and tools; resumes summarised
    assert SECRET not in json.dumps(fake_llm.requests) and "forwarded" not in json.dumps(fake_llm.requests)
    turns = model_turns(fake_llm)
    assert [a for a, _ in turns] == ["triage_agent", "refund_agent", "refund_agent", "refund_agent", "refund_agent"]
    assert tool_names(turns[0][1]) == {"handoff_to_refund_agent", "handoff_to_order_agent", "request_info"}
    assert tool_names(turns[1][1]) == {"lookup_order_details", "submit_refund", "handoff_to_order_agent",
                                       "request_info"}
    for _, req in turns[2:]:  # continuations carry the saved-state summary right after the prompt
        summary = req["messages"][1]
        assert summary["role"] == "system" and "resuming the support workflow" in summary["content"]
        assert f"Task: {REFUND_PROMPT}" in summary["content"]
        assert "Do not repeat completed steps" in summary["content"]
        assert "triage_agent: handoff_to_refund_agent" in summary["content"]
    assert "refund_agent: request_info" in turns[2][1]["messages"][1]["content"]
    assert "refund_agent: submit_refund" in turns[4][1]["messages"][1]["content"]
    for _, req in turns[:2]:
        assert all(m["role"] != "system" or "resuming" not in m["content"] for m in req["messages"])


# --- the runner, driven directly ----------------------------------------------------------------

@pytest.fixture
def direct(monkeypatch):
    """Runs are executed here, not by Celery (start_run / continue_run still record them)."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)


def support_thread(user):
    return services.create_thread(user, "support")


@pytest.mark.django_db(transaction=True)
def test_cancelling_the_question_ends_the_workflow_and_the_next_request_is_a_new_case(demo, direct, api):
    alice = demo["alice"]
    thread = support_thread(alice)
    paused = run_prompt(thread, alice, REFUND_PROMPT)
    assert paused.status == "interrupted"
    question = InputRequest.objects.get(thread=thread)

    resp = api("alice").post(f"/api/threads/{thread.pk}/answer/", {"cancel": True}, format="json")
    assert resp.status_code == 202, resp.content
    assert resp.json()["status"] == "cancelled" and resp.json()["continuation_run_id"]
    cont = run_continuation(paused)
    assert cont.status == "cancelled"
    events = of_run(stream_events(thread.pk), cont.pk)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert steps_of(events) == ["refund_agent"]
    assert custom(events, "status")[-1] == {"state": "cancelled"}
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == question.tool_call_id and "cancelled" in result["content"]
    assert not [e for e in events if e["type"] == "TEXT_MESSAGE_START"]  # the model was not asked again
    assert WorkflowInstance.objects.get(thread=thread).status == "cancelled"
    assert not OrderAction.objects.exists()

    # a new request after a cancelled case starts the next case from the start agent
    nxt = run_prompt(thread, alice, "Can you send a replacement for my coffee grinder, order 12346? Express please.")
    instance = WorkflowInstance.objects.get(thread=thread)
    assert instance.case == 2 and instance.task.startswith("Can you send a replacement")
    assert [p["agent"] for p in instance.path] == ["triage_agent", "order_agent"]
    assert steps_of(of_run(stream_events(thread.pk), nxt.pk)) == ["triage_agent", "order_agent"]
    # order_agent had what it needed: it looked the order up and asked alice (requester) to confirm
    assert nxt.status == "interrupted"
    call = ToolCall.objects.get(thread=thread, name="submit_replacement")
    assert call.status == "awaiting_approval"
    assert call.arguments["shipping_preference"] == "express" and call.arguments["order_id"] == "12346"


@pytest.mark.django_db(transaction=True)
def test_rest_answer_endpoint_validates_and_continues(demo, direct, api):
    alice = demo["alice"]
    thread = support_thread(alice)
    paused = run_prompt(thread, alice, REFUND_PROMPT)
    question = InputRequest.objects.get(thread=thread)
    client = api("alice")

    snap = client.get(f"/api/threads/{thread.pk}/")  # the thread itself is plain REST; the snapshot is below
    assert snap.status_code == 200
    from agents.snapshots import thread_snapshot

    snapshot = thread_snapshot(thread.pk)
    assert [q["requestId"] for q in snapshot["input_requests"]] == [question.pk]
    assert snapshot["input_requests"][0]["status"] == "pending"
    assert snapshot["workflow"]["activeAgent"] == "refund_agent"
    assert snapshot["workflow"]["state"] == "idle_with_pending_requests"

    # a REST client reads what is asked and the shape of its answer before it answers
    asked = client.get(f"/api/threads/{thread.pk}/questions/")
    assert asked.status_code == 200 and [q["requestId"] for q in asked.json()] == [question.pk]
    assert asked.json()[0]["message"] == question.message and asked.json()[0]["status"] == "pending"
    assert asked.json()[0]["responseSchema"]["required"] == ["order_id"]
    assert api("bob").get(f"/api/threads/{thread.pk}/questions/").status_code == 404  # not bob's chat

    bad = client.post(f"/api/threads/{thread.pk}/answer/", {"answer": {"order_id": "x"}}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_payload"
    assert "order_id" in bad.json()["errors"][0]
    # said for the person answering, in their words (not jsonschema's English, no schema term)
    assert "is not of type" not in bad.json()["message"] and "responseSchema" not in bad.json()["message"]
    in_french = client.post(f"/api/threads/{thread.pk}/answer/", {"answer": {"order_id": 5}}, format="json",
                            HTTP_ACCEPT_LANGUAGE="fr")
    assert in_french.json()["errors"] == ["order_id: Doit être du texte."], in_french.json()
    assert client.post(f"/api/threads/{thread.pk}/answer/", {}, format="json").status_code == 400
    unknown = client.post(f"/api/threads/{thread.pk}/answer/", {"request_id": "nope", "answer": "x"}, format="json")
    assert unknown.status_code == 404
    assert api("bob").post(f"/api/threads/{thread.pk}/answer/", {"answer": {"order_id": "12345"}},
                           format="json").status_code == 404  # not bob's chat
    busy = client.post(f"/api/threads/{thread.pk}/messages/", {"content": "hello?"}, format="json")
    assert busy.status_code == 409 and busy.json()["pending"] == [question.pk]

    ok = client.post(f"/api/threads/{thread.pk}/answer/",
                     {"request_id": question.pk, "answer": {"order_id": "12345"}}, format="json")
    assert ok.status_code == 202, ok.content
    assert ok.json()["answer"] == {"order_id": "12345"} and ok.json()["status"] == "answered"
    again = client.post(f"/api/threads/{thread.pk}/answer/",
                        {"request_id": question.pk, "answer": {"order_id": "12345"}}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"
    # a retry after a lost answer, without request_id: nothing is open, said so (not "name one")
    retry = client.post(f"/api/threads/{thread.pk}/answer/", {"answer": {"order_id": "12345"}}, format="json")
    assert retry.status_code == 409 and retry.json()["code"] == "nothing_open"
    assert client.get(f"/api/threads/{thread.pk}/questions/").json() == []
    cont = run_continuation(paused)
    assert cont.pk == ok.json()["continuation_run_id"]
    assert cont.status == "interrupted"  # next stop: the support group's approval of submit_refund
    assert ToolCall.objects.get(thread=thread, name="submit_refund").status == "awaiting_approval"
    assert ToolCall.objects.get(thread=thread, name="lookup_order_details").status == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_handoff_must_follow_an_edge(demo, direct, fake_llm):
    alice = demo["alice"]
    thread = support_thread(alice)
    fake_llm.push(
        {"text": "Let me send you back to myself.", "tool_calls": [
            {"id": "call_bad_handoff", "name": "handoff_to_triage_agent", "arguments": "{}"}]},
        {"text": "Sorry about that. Case complete."},
    )
    run = run_prompt(thread, alice, "Hello there")
    assert run.status == "succeeded"
    call = ToolCall.objects.get(pk="call_bad_handoff")
    assert call.status == "invalid"
    tool_msg = fake_llm.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "cannot hand off to triage_agent" in tool_msg["content"]
    assert "refund_agent, order_agent" in tool_msg["content"]
    instance = WorkflowInstance.objects.get(thread=thread)
    assert instance.active_agent == "triage_agent" and instance.status == "completed"
    events = of_run(stream_events(thread.pk), run.pk)
    assert steps_of(events) == ["triage_agent"]
    assert custom(events, "workflow_output")[-1] == {"type": "output", "agent": "triage_agent",
                                                     "text": "Sorry about that. Case complete."}


@pytest.mark.django_db(transaction=True)
def test_a_reply_without_handoff_leaves_the_workflow_idle_in_the_same_agent(demo, direct):
    alice = demo["alice"]
    thread = support_thread(alice)
    first = run_prompt(thread, alice, "Hi, I have a question")
    assert first.status == "succeeded"
    instance = WorkflowInstance.objects.get(thread=thread)
    assert instance.status == "idle" and instance.active_agent == "triage_agent"
    assert custom(of_run(stream_events(thread.pk), first.pk), "status")[-1] == {"state": "idle"}
    # the next message continues the same case in the same agent
    run_prompt(thread, alice, "I want a refund for order 12346, it stopped working")
    instance.refresh_from_db()
    assert instance.case == 1 and [p["agent"] for p in instance.path] == ["triage_agent", "refund_agent"]
    # the order number was in the message: no question, straight to lookup and the approval
    assert not InputRequest.objects.filter(thread=thread).exists()
    assert ToolCall.objects.get(thread=thread, name="submit_refund").arguments["amount"] == 59.0


@pytest.mark.django_db
def test_the_catalog_lists_the_workflow(demo, api, client):
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    listing = client.get("/agui/", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    support = next(a for a in listing["agents"] if a["name"] == "support")
    assert {t["name"]: (t["approval"], t["approver"]) for t in support["tools"]} == {
        "lookup_order_details": ("never", "requester"),
        "submit_refund": ("always", "group:support"),
        "submit_replacement": ("always", "requester"),
    }
    graph = support["workflow"]
    assert graph["start"] == "triage_agent"
    assert {a["name"]: a["handoffs"] for a in graph["agents"]} == {
        "triage_agent": ["refund_agent", "order_agent"], "refund_agent": ["order_agent"],
        "order_agent": ["triage_agent"]}
    assert demo["rita"].groups.filter(name="support").exists()
    page = api("alice").get("/api/threads/")
    assert page.status_code == 200


def test_workflow_definitions_are_checked():
    a, b = Agent(name="a", title="A", description="", system_prompt=""), Agent(
        name="b", title="B", description="", system_prompt="")
    with pytest.raises(ValueError, match="start agent"):
        Workflow(name="w", title="W", description="", system_prompt="", participants=[a, b], start="c")
    with pytest.raises(ValueError, match="unknown agent"):
        Workflow(name="w", title="W", description="", system_prompt="", participants=[a, b], start="a",
                 handoffs=[Handoff("a", "z")])
    assert get_agent("support").participant("refund_agent").tool("submit_refund")
    assert ends_with_case_complete([{"role": "assistant", "content": "Refunded.  Case complete. "}])
    assert not ends_with_case_complete([{"role": "assistant", "content": "Case complete? Not yet."},
                                        {"role": "user", "content": "case complete."}])


@pytest.mark.django_db(transaction=True)
def test_a_gated_call_and_a_handoff_in_one_turn(demo, direct, fake_llm):
    """refund_agent asks for a refund (the support group decides) and hands off to order_agent in the
    same turn. The run pauses with order_agent already active; once approved, the continuation runs
    the refund, which belongs to refund_agent's tools, exactly once, and order_agent answers."""
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest

    alice = demo["alice"]
    thread = support_thread(alice)
    refund = {"order_id": "12346", "amount": 59.0, "refund_description": "Stopped working"}
    fake_llm.push(
        {"tool_calls": [{"id": "call_to_refund", "name": "handoff_to_refund_agent", "arguments": "{}"}]},
        {"text": "I'll refund it and pass you to orders for the replacement.", "tool_calls": [
            {"id": "call_refund", "name": "submit_refund", "arguments": json.dumps(refund)},
            {"id": "call_to_orders", "name": "handoff_to_order_agent",
             "arguments": json.dumps({"summary": "refund requested for 12346; wants a replacement"})}]},
        {"text": "Your refund went through. Case complete."},
    )
    paused = run_prompt(thread, alice, "Order 12346 stopped working: refund it, and I want a replacement")
    assert paused.status == "interrupted"
    instance = WorkflowInstance.objects.get(thread=thread)
    assert instance.active_agent == "order_agent"
    assert [p["agent"] for p in instance.path] == ["triage_agent", "refund_agent", "order_agent"]
    assert ToolCall.objects.get(pk="call_refund").status == "awaiting_approval"
    assert not OrderAction.objects.exists()

    request = ApprovalRequest.objects.get(tool_call_ref="call_refund")
    approval_services.decide(request.pk, demo["rita"], "approve")
    cont = run_continuation(paused)
    assert cont.status == "succeeded"
    action = OrderAction.objects.get()
    assert (action.kind, str(action.amount), action.tool_call_ref) == ("refund", "59.00", "call_refund")
    assert ToolCall.objects.get(pk="call_refund").status == "succeeded"
    events = of_run(stream_events(thread.pk), cont.pk)
    assert steps_of(events) == ["order_agent"]  # the refund settled inside the active agent's step
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == "call_refund")
    assert "Refund of 59.00" in result["content"]
    agent, last = model_turns(fake_llm)[-1]
    assert agent == "order_agent" and "submit_refund" not in tool_names(last)
    assert WorkflowInstance.objects.get(thread=thread).status == "completed"


@pytest.mark.django_db(transaction=True)
def test_a_participants_shared_state_streams_and_commits_inside_a_workflow(demo, direct, fake_llm, settings):
    """A workflow whose participant declares shared state (the recipe agent): the workflow takes
    its participants' state declarations together, so the participant's tool streams predicted
    STATE_DELTAs and commits like the agent alone would, and people's edits are checked against
    the same schema."""
    from agents.catalog import AGENTS, recipe, register_agent, support
    from agents.llm.scripted.state import CARBONARA
    from agents.runtime import statesync
    from agents.runtime.workflows import merged_state
    from state import services as state_services

    settings.AGUI_STATE_DELTA_INTERVAL = 0  # every growth of the arguments is a delta (no throttle)
    cooking = Workflow(
        name="cooking_desk", title="Cooking desk (test)", description="Triage, then the recipe agent.",
        system_prompt="", participants=[support.TRIAGE, recipe.AGENT],
        handoffs=[Handoff("triage_agent", "recipe", "Route cooking questions.")], start="triage_agent")
    assert cooking.predict_state_config == recipe.AGENT.predict_state_config
    assert cooking.state_schema == recipe.AGENT.state_schema
    register_agent(cooking)
    try:
        alice = demo["alice"]
        thread = services.create_thread(alice, "cooking_desk")
        fake_llm.push(
            {"tool_calls": [{"id": "call_to_recipe", "name": "handoff_to_recipe", "arguments": "{}"}]},
            {"text": "Here it is.", "tool_calls": [{"id": "call_recipe", "name": "update_recipe",
                                                    "arguments": json.dumps({"recipe": CARBONARA})}]},
            {"text": "Enjoy your carbonara. Case complete."},
        )
        run = run_prompt(thread, alice, "I want to make a classic Italian pasta carbonara")
        assert run.status == "succeeded"
        assert state_services.snapshot(thread.state_key) == ({"recipe": CARBONARA}, 1)
        events = of_run(stream_events(thread.pk), run.pk)
        types = [e["type"] for e in events]
        deltas = [e for e in events if e["type"] == "STATE_DELTA"]
        assert len(deltas) > 3 and deltas[0]["delta"][0]["op"] == "add"  # the key is new the first time
        # predicted while the arguments streamed, inside the recipe agent's step
        args_at = next(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == "call_recipe")
        end_at = next(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_END" and e["toolCallId"] == "call_recipe")
        assert args_at < types.index("STATE_DELTA") < end_at
        assert steps_of(events) == ["triage_agent", "recipe"]
        assert [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"][-1] == {"recipe": CARBONARA}

        # a person's edit on the workflow's thread meets the recipe schema
        with pytest.raises(state_services.StateInvalid):
            statesync.apply_user_patch(thread, alice, [
                {"op": "replace", "path": "/recipe/title", "value": 42}], base_version=1)
        assert state_services.snapshot(thread.state_key)[1] == 1
    finally:
        AGENTS.pop("cooking_desk", None)

    # declarations that cannot hold together are refused when the workflow is defined
    other = recipe.AGENT.__class__(name="other", title="", description="", system_prompt="",
                                   predict_state_config={"recipe": {"tool": "x", "tool_argument": "*"}})
    with pytest.raises(ValueError, match="predict state key 'recipe' differently"):
        merged_state([recipe.AGENT, other], "broken")


@pytest.mark.django_db(transaction=True)
def test_the_simulator_replays_a_workflows_call_by_the_agent_that_made_it(demo, direct):
    """Policy judges a workflow's call by its participant (refund_agent); the simulator replayed it
    by the thread's workflow (support): a rule on `agent eq support` read "a person decides" for every
    recorded refund, and ran none of them past a person once saved."""
    from approvals import simulate
    from approvals.models import ToolPolicy

    alice = demo["alice"]
    thread = support_thread(alice)
    run_prompt(thread, alice, "Hi, I have a question")
    run_prompt(thread, alice, "I want a refund for order 12346, it stopped working")
    call = ToolCall.objects.get(thread=thread, name="submit_refund")
    assert call.agent == "refund_agent" and call.status == "awaiting_approval"

    def replayed(agent):
        draft = ToolPolicy(tool_name="submit_refund", mode="conditional", conditions=[
            {"name": "by agent", "when": {"path": "agent", "op": "eq", "value": agent}, "action": "gate"},
            {"name": "rest", "action": "allow"}])
        return dict(simulate.simulate(draft, 50).counts)

    assert replayed("refund_agent").get("gated") == 1 and not replayed("refund_agent").get("allowed")
    assert replayed("support").get("allowed") == 1 and not replayed("support").get("gated")
