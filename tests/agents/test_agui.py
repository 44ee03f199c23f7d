"""The AG-UI SSE endpoint driven like an AG-UI client would, against a live worker and real Redis."""

import json
import uuid
from decimal import Decimal

import pytest
from ag_ui.core import Event
from asgiref.sync import async_to_sync
from pydantic import TypeAdapter

from agents.catalog.models import Transfer
from agents.models import Run, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
EVENT = TypeAdapter(Event)
PROMPT = "Transfer $500 from account 1234567890 to account 0987654321"


def run_input(thread_id, messages=(), resume=None, run_id=None, **extra):
    body = {"threadId": thread_id, "runId": run_id or f"run-{uuid.uuid4()}", "messages": list(messages),
            "state": {}, "tools": [], "context": [], "forwardedProps": {}, **extra}
    if resume is not None:
        body["resume"] = resume
    return body


def user_msg(text):
    return {"id": f"msg-{uuid.uuid4()}", "role": "user", "content": text}


def post(client, agent, body, **headers):
    resp = client.post(f"/agui/{agent}/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", **headers)
    return resp


async def _collect(content):
    return b"".join([chunk async for chunk in content])


def sse_events(resp):
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"
    raw = async_to_sync(_collect)(resp.streaming_content).decode()
    frames = [f for f in raw.split("\n\n") if f]
    out = []
    for f in frames:
        assert f.startswith("data: "), f
        data = json.loads(f[len("data: "):])
        # every event round-trips through its ag_ui.core model, unchanged
        model = EVENT.validate_python(data)
        assert json.loads(model.model_dump_json(by_alias=True)) == data
        out.append(data)
    return out


def refusal(resp):
    """A refusal after authentication: in-stream, RUN_STARTED then RUN_ERROR (state refusals put
    the current state between them); returns the RUN_ERROR."""
    events = sse_events(resp)
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_ERROR", events
    assert {e["type"] for e in events[1:-1]} <= {"STATE_SNAPSHOT", "CUSTOM"}, events
    return events[-1]


@pytest.fixture
def token_headers(api, demo):
    from rest_framework.authtoken.models import Token

    def make(username):
        return {"HTTP_AUTHORIZATION": f"Bearer {Token.objects.get_or_create(user=demo[username])[0].key}"}

    return make


def test_interrupt_then_resume_with_edited_arguments(celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg(PROMPT)]), **alice))
    types = [e["type"] for e in first]
    assert types[0] == "RUN_STARTED" and types[1] == "MESSAGES_SNAPSHOT" and types[2] == "STATE_SNAPSHOT"
    assert types[-1] == "RUN_FINISHED" and "outcome" not in first[-1]  # finance decides: not alice's interrupt
    status = next(e["value"] for e in first if e["type"] == "CUSTOM" and e["name"] == "approval_status")
    assert status["decidedBy"] == "finance" and status["approver"] == {"kind": "group", "group": "finance"}
    interrupt = {"id": status["approvalId"]}
    # the requester cannot answer a finance-routed request
    denied = sse_events(post(client, "banking", run_input(
        thread_id, resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]), **alice))
    assert [e["type"] for e in denied] == ["RUN_STARTED", "RUN_ERROR"] and denied[-1]["code"] == "forbidden"
    # a new message while the interrupt is open is refused and nothing starts
    pending = sse_events(post(client, "banking", run_input(thread_id, [user_msg("hello?")]), **alice))
    assert pending[-1]["code"] == "interrupt_pending" and interrupt["id"] in pending[-1]["message"]
    assert Run.objects.filter(thread_id=thread_id).count() == 1


def test_requester_resume_cancel_and_reject_and_approve(celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg("Cancel my subscription sub_123")]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    assert interrupt["metadata"]["approver"] == {"kind": "requester"}
    # missing and unknown answers change nothing
    missing = sse_events(post(client, "banking", run_input(thread_id, resume=[]), **alice))
    assert [e["type"] for e in missing] == ["RUN_STARTED", "RUN_ERROR"] and missing[-1]["code"] == "missing_resume"
    assert interrupt["id"] in missing[-1]["message"]
    unknown = sse_events(post(client, "banking", run_input(
        thread_id, resume=[{"interruptId": "nope", "status": "resolved", "payload": {"approved": True}}]), **alice))
    assert unknown[-1]["code"] == "unknown_interrupt"
    bad = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True, "arguments": {"subscription_id": ""}}}
    ]), **alice))
    assert bad[-1]["code"] == "invalid_arguments"

    run_id = f"run-{uuid.uuid4()}"
    resumed = sse_events(post(client, "banking", run_input(thread_id, run_id=run_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"accepted": True}}
    ]), **alice))
    types = [e["type"] for e in resumed]
    assert resumed[0]["runId"] == run_id and resumed[0]["parentRunId"] == first[0]["runId"]
    assert "TOOL_CALL_RESULT" in types and types[-1] == "RUN_FINISHED"
    assert next(e for e in resumed if e["type"] == "CUSTOM")["value"]["approved"] is True
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"] and "cancelled" in result["content"]
    again = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
    ]), **alice))
    assert again[-1]["code"] == "already_decided"


def test_text_sent_with_a_resume_is_stored_after_the_results_and_answered_in_the_same_run(
        celery_worker_live, fake_llm, client, token_headers):
    from agents.models import Message

    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    ask = user_msg("Cancel my subscription sub_123")
    first = sse_events(post(client, "banking", run_input(thread_id, [ask]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    fake_llm.push({"text": "Done; and your plan was Basic."})
    more = user_msg("Also, which plan was it?")
    run_id = f"run-{uuid.uuid4()}"
    resumed = sse_events(post(client, "banking", run_input(thread_id, [ask, more], run_id=run_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]), **alice))
    assert resumed[0]["runId"] == run_id and resumed[-1]["type"] == "RUN_FINISHED"
    assert "Done; and your plan was Basic." in "".join(e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT")
    # the model got the call, its result, then the new text (the order the API insists on)
    sent = [(m["role"], m.get("tool_call_id") or m["content"]) for m in fake_llm.requests[-1]["messages"]
            if m["role"] != "system"]
    assert [r for r, _ in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2:] == [("tool", interrupt["toolCallId"]), ("user", more["content"])]
    stored = list(Message.objects.filter(thread_id=thread_id).values_list("role", "content", "run_id"))
    assert [r for r, *_ in stored] == ["user", "assistant", "tool", "user", "assistant"]
    assert stored[3][1] == more["content"] and stored[3][2] == run_id and Message.objects.filter(pk=more["id"]).exists()
    # the client sees its text in the continuation's history
    snapshots = [e for e in resumed if e["type"] == "MESSAGES_SNAPSHOT"]
    assert any(m["id"] == more["id"] for m in snapshots[-1]["messages"])
    assert Run.objects.get(pk=first[0]["runId"]).queued_messages == []


def test_a_resume_whose_new_messages_share_an_id_is_refused_before_the_answer_is_applied(
        celery_worker_live, fake_llm, client, token_headers):
    """Two new messages under one id, sent with the answer: refused whole, the call still waiting
    (the tool used to run, then the run failed storing the second message and lost both)."""
    from agents.models import Message
    from approvals.models import ApprovalRequest

    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    ask = user_msg("Cancel my subscription sub_123")
    first = sse_events(post(client, "banking", run_input(thread_id, [ask]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    twin = f"msg-{uuid.uuid4()}"
    refused = sse_events(post(client, "banking", run_input(thread_id, [
        ask, {"id": twin, "role": "user", "content": "one"}, {"id": twin, "role": "user", "content": "two"}],
        resume=answer), **alice))
    assert [e["type"] for e in refused] == ["RUN_STARTED", "RUN_ERROR"]
    assert refused[-1]["code"] == "duplicate_message_id" and twin in refused[-1]["message"]
    assert ApprovalRequest.objects.get(pk=interrupt["id"]).status == ApprovalRequest.Status.PENDING
    assert not Message.objects.filter(thread_id=thread_id, role="tool").exists()
    assert not Message.objects.filter(pk=twin).exists()
    # the same answer with the messages apart goes through
    done = sse_events(post(client, "banking", run_input(thread_id, [ask, user_msg("one"), user_msg("two")],
                                                        resume=answer), **alice))
    assert done[-1]["type"] == "RUN_FINISHED"
    assert [m for m in Message.objects.filter(thread_id=thread_id, role="user").values_list("content", flat=True)][1:] == [
        "one", "two"]


def test_resume_may_always_allow_a_requester_tool_in_the_thread(celery_worker_live, fake_llm, client, token_headers):
    """The chat's "always allow in this thread" over AG-UI: approving with alwaysAllowInThread
    records a grant, and the tool then runs in that thread without asking."""
    from approvals.models import ThreadGrant

    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg("Cancel my subscription sub_123")]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    assert interrupt["responseSchema"]["properties"]["alwaysAllowInThread"]["type"] == "boolean"
    bad = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True, "alwaysAllowInThread": "yes"}}
    ]), **alice))
    assert bad[-1]["code"] == "invalid_resume" and "alwaysAllowInThread" in bad[-1]["message"]
    refused = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": False, "alwaysAllowInThread": True}}
    ]), **alice))
    assert refused[-1]["code"] == "invalid_resume" and "always allow" in refused[-1]["message"]
    assert not ThreadGrant.objects.exists()  # neither answer changed anything

    resumed = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True, "alwaysAllowInThread": True}}
    ]), **alice))
    assert resumed[-1]["type"] == "RUN_FINISHED" and "TOOL_CALL_RESULT" in [e["type"] for e in resumed]
    grant = ThreadGrant.objects.get()
    assert (grant.tool_name, grant.thread_ref, grant.user.username) == ("cancel_subscription", thread_id, "alice")

    again = sse_events(post(client, "banking", run_input(thread_id, [user_msg("Cancel my subscription sub_123")]), **alice))
    assert again[-1]["type"] == "RUN_FINISHED"
    assert (again[-1].get("outcome") or {}).get("type") != "interrupt"
    assert [e["toolCallName"] for e in again if e["type"] == "TOOL_CALL_START"] == ["cancel_subscription"]
    assert "TOOL_CALL_RESULT" in [e["type"] for e in again]  # ran at once: the grant answered for her


def test_cancelled_resume_ends_with_cancelled_outcome(celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg(PROMPT)]), **alice))
    interrupt = {"id": next(e["value"]["approvalId"] for e in first if e["type"] == "CUSTOM"
                            and e["name"] == "approval_status")}  # finance decides; alice may withdraw it
    done = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "cancelled"}]), **alice))
    assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["outcome"] == {"type": "cancelled"}
    assert not Transfer.objects.exists()


def test_group_decision_in_inbox_is_seen_by_next_post(celery_worker_live, fake_llm, client, api, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg(PROMPT)]), **alice))
    interrupt = {"id": next(e["value"]["approvalId"] for e in first if e["type"] == "CUSTOM"
                            and e["name"] == "approval_status")}
    from tests.conftest import wait_for_event

    api("finn").post(f"/api/approvals/{interrupt['id']}/decide/",
                     {"decision": "approve", "arguments": {"from_account": "1234567890", "to_account": "0987654321",
                                                           "amount": 450, "currency": "USD"}}, format="json")
    wait_for_event(thread_id, lambda e: e["type"] == "RUN_FINISHED" and e.get("runId") != first[0]["runId"])
    assert Transfer.objects.get().amount == Decimal("450.00")
    nxt = sse_events(post(client, "banking", run_input(thread_id, [user_msg("thanks")]), **alice))
    snapshot = nxt[1]
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert any(m["role"] == "tool" and "450.00" in m["content"] for m in snapshot["messages"])


def test_frontend_tool_round_trip(celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    tools = [{"name": "show_confetti", "description": "Celebrate in the UI", "parameters": {"type": "object", "properties": {}}}]
    fake_llm.push({"tool_calls": [{"id": "call_confetti", "name": "show_confetti", "arguments": "{}"}]})
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg("celebrate")], tools=tools), **alice))
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_confetti"]}
    assert fake_llm.requests[-1]["tools"][-1]["function"]["name"] == "show_confetti"
    fake_llm.push({"text": "Confetti shown!"})
    tool_msg = {"id": f"tool-{uuid.uuid4()}", "role": "tool", "toolCallId": "call_confetti", "content": "shown"}
    second = sse_events(post(client, "banking", run_input(thread_id, [tool_msg], tools=tools), **alice))
    assert second[-1]["type"] == "RUN_FINISHED"
    assert second[-1].get("outcome", {"type": "success"})["type"] == "success"
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_confetti", "content": "shown"}


def test_forwarded_props_stored_never_sent_to_model(celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    body = run_input(thread_id, [user_msg("hello")], forwardedProps={"secret_flag": "zebra-42"})
    body.pop("forwardedProps")
    body["forwarded_props"] = {"secret_flag": "zebra-42"}
    events = sse_events(post(client, "banking", body, **alice))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert Run.objects.get(pk=events[0]["runId"]).forwarded_props == {"secret_flag": "zebra-42"}
    assert "zebra-42" not in json.dumps(fake_llm.requests)


def test_null_lists_are_taken_as_left_out(celery_worker_live, fake_llm, client, token_headers):
    """Optional fields sent as null (as SDKs that serialise every field of their model do) are
    what leaving them out is: tools: null was iterated and failed the run (internal_error)."""
    alice = token_headers("alice")
    body = run_input(f"thread-{uuid.uuid4()}", [user_msg("hello")],
                     tools=None, context=None, state=None, forwardedProps=None)
    events = sse_events(post(client, "banking", body, **alice))
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    run = Run.objects.get(pk=events[0]["runId"])
    assert run.client_tools == [] and run.context == [] and run.forwarded_props == {}


@pytest.mark.parametrize("body,field,status", [
    (b"not json", "body", 400), (b"[]", "body", 400),  # malformed: not a JSON object
    (json.dumps({"threadId": "t"}), "runId", 422),  # well-formed, not a RunAgentInput
    (json.dumps({"threadId": "t", "runId": "r", "messages": "x"}), "messages", 422)])
def test_malformed_bodies_get_400_and_invalid_inputs_422(client, token_headers, body, field, status):
    resp = client.post("/agui/banking/", body, content_type="application/json", **token_headers("alice"))
    assert resp.status_code == status and field in resp.json()["errors"]
    assert not Thread.objects.exists()


def test_who_may_run(client, token_headers, demo):
    body = json.dumps(run_input("t-owned", [user_msg("hi")]))
    anonymous = client.post("/agui/banking/", body, content_type="application/json")
    # RFC 9110: a 401 names its challenge; the code is the REST API's
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Bearer"
    assert anonymous.json()["code"] == "not_authenticated"
    assert client.post("/agui/nope/", body, content_type="application/json", **token_headers("alice")).status_code == 404
    Thread.objects.create(id="t-owned", owner=demo["bob"], agent="banking")
    resp = client.post("/agui/banking/", body, content_type="application/json", **token_headers("alice"))
    assert refusal(resp)["code"] == "thread_id_used" and not Run.objects.exists()  # as a deleted chat's id
    resp = client.post("/agui/banking/", body, content_type="application/json",
                       HTTP_AUTHORIZATION="Bearer wrong")
    assert resp.status_code == 401 and resp["WWW-Authenticate"] == "Bearer" and resp.json()["code"] == "invalid_token"
    assert client.get("/agui/")["WWW-Authenticate"] == "Bearer"
    listing = client.get("/agui/", **token_headers("alice")).json()
    banking = next(a for a in listing["agents"] if a["name"] == "banking")
    assert {t["name"]: t["approval"] for t in banking["tools"]}["transfer_money"] == "always"
    assert client.get("/agui/").status_code == 401


def test_get_agent_says_what_it_accepts_as_agent_capabilities(client, token_headers, demo):
    from ag_ui.core import AgentCapabilities

    for path in ("/agui/banking", "/agui/banking/"):
        resp = client.get(path, **token_headers("alice"))
        assert resp.status_code == 200, resp.content
        caps = AgentCapabilities.model_validate(resp.json())  # the protocol's own shape
        data = resp.json()
        assert caps.identity.name == "banking" and caps.transport.streaming is True
        assert "transfer_money" in [t.name for t in caps.tools.items] and caps.tools.client_provided is True
        assert data["humanInTheLoop"] == {"supported": True, "approvals": True, "interrupts": True,
                                          "approveWithEdits": True, "feedback": True}
        assert data["custom"]["approvals"]["transfer_money"] == {"approval": "always", "approver": "group:finance"}
        assert data["multimodal"]["input"]["image"] is False  # the default model takes no images
    recipe = client.get("/agui/recipe", **token_headers("alice")).json()
    assert recipe["state"]["snapshots"] is True and recipe["custom"]["stateSchema"]["type"] == "object"
    assert client.get("/agui/banking").status_code == 401
    assert client.get("/agui/nope", **token_headers("alice")).status_code == 404


def test_reused_run_id_conflicts(celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    body = run_input(f"thread-{uuid.uuid4()}", [user_msg("hello")])
    assert sse_events(post(client, "banking", body, **alice))[-1]["type"] == "RUN_FINISHED"
    resp = post(client, "banking", body, **alice)
    assert refusal(resp)["code"] == "run_exists"


def test_the_endpoint_answers_with_and_without_the_trailing_slash(client, token_headers, monkeypatch):
    """Microsoft Agent Framework's AGUIChatClient strips the slash: that POST got a 500 (APPEND_SLASH's
    RuntimeError; a 301 with DEBUG off) instead of a run."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    alice = token_headers("alice")
    for path in ("/agui/banking", "/agui/banking/"):
        resp = client.post(path, json.dumps(run_input(f"thread-{uuid.uuid4()}", [user_msg("hello")])),
                           content_type="application/json", HTTP_ACCEPT="text/event-stream", **alice)
        assert resp.status_code == 200, (path, resp.status_code)
        assert resp["Content-Type"] == "text/event-stream"
        resp.close()
    for path in ("/agui", "/agui/"):
        listing = client.get(path, **alice)
        assert listing.status_code == 200 and "banking" in {a["name"] for a in listing.json()["agents"]}, path


def test_a_resume_that_resends_the_history_with_new_ids_stores_no_turn_again(
        celery_worker_live, fake_llm, client, token_headers):
    """Agent Framework's AGUIChatClient answers an interrupt with its whole history, new ids and
    nothing new after our call. Before, the question was stored again after the result, so the
    model proposed the call again and the approved run ended in a second interrupt."""
    from agents.models import Message

    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg("Cancel my subscription sub_123")]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    history = [user_msg("Cancel my subscription sub_123"), {
        "id": f"msg-{uuid.uuid4()}", "role": "assistant", "content": "I can cancel subscription sub_123 for you.",
        "toolCalls": [{"id": interrupt["toolCallId"], "type": "function", "function": {
            "name": "cancel_subscription", "arguments": json.dumps({"subscription_id": "sub_123"})}}]}]
    resumed = sse_events(post(client, "banking", run_input(thread_id, history, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]), **alice))
    assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1].get("outcome", {"type": "success"})["type"] == "success"
    assert list(Message.objects.filter(thread_id=thread_id, role="user").values_list("content", flat=True)) == [
        "Cancel my subscription sub_123"]


def test_a_resumes_snapshot_holds_none_of_what_its_stream_then_sends(celery_worker_live, fake_llm, client,
                                                                     token_headers, monkeypatch):
    """A resume's continuation is published when the answers commit; a worker quicker than the POST's
    read of the conversation had stored the call's result and the answer by then, so MESSAGES_SNAPSHOT
    held them and the stream sent them again: the official client kept the result twice (one id) and
    the answer's text doubled (its TEXT_MESSAGE_CONTENT appended to the snapshot's copy). The
    snapshot is the conversation before the continuation, as another reader's continuation_head is."""
    from agents.agui import endpoint
    from tests.conftest import wait_for_event

    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg("Cancel my subscription sub_123")]),
                            **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    run_id = f"run-{uuid.uuid4()}"
    read = endpoint.selectors.thread_messages

    def after_the_worker(pk):  # the worker wins the race: the continuation ends before the read
        wait_for_event(thread_id, lambda e: e["type"] == "RUN_FINISHED" and e["runId"] == run_id)
        return read(pk)

    monkeypatch.setattr(endpoint.selectors, "thread_messages", after_the_worker)
    resumed = sse_events(post(client, "banking", run_input(thread_id, run_id=run_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]), **alice))
    types = [e["type"] for e in resumed]
    assert types[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and types[-1] == "RUN_FINISHED", types
    held = {m["id"] for m in resumed[1]["messages"]}
    sent = {e["messageId"] for e in resumed[2:] if e["type"] in ("TOOL_CALL_RESULT", "TEXT_MESSAGE_START")}
    assert sent and not held & sent, (held, sent)
    assert Run.objects.get(pk=run_id).status == Run.Status.SUCCEEDED
