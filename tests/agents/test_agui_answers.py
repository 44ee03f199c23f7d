"""What the AG-UI endpoint answers when it refuses, and to which methods (an outside tester's
findings): refusals in sentences of ours naming the wire's fields — never pydantic's union
members, jsonschema's English, a Python dict or the same sentence twice; 400 for a body that is
not a JSON object, 422 for one that is not a RunAgentInput; `Allow` on 405 and OPTIONS, HEAD as
GET; the agents' names only for a signed-in caller."""

import json

import pytest

from agents import services
from agents.models import Run, Thread
from agents.runtime.runner import interrupt_for
from approvals.models import ApprovalRequest
from tests.agents.test_agui import refusal

# no worker (the autouse no_enqueue), as the input tests have it; alice's `bearer`: conftest.py
from tests.agents.test_agui_inputs import first_events, fresh, no_enqueue  # noqa: F401
from tests.helpers import run_prompt

pytestmark = [pytest.mark.django_db(transaction=True)]




def body(thread_id=None, messages=(), **extra):
    return {"threadId": thread_id or fresh("t"), "runId": fresh("run"), "messages": list(messages), "state": {},
            "tools": [], "context": [], "forwardedProps": {}, **extra}


def post(client, bearer, data, agent="banking", **headers):
    raw = data if isinstance(data, bytes | str) else json.dumps(data)
    return client.post(f"/agui/{agent}/", raw, content_type="application/json", HTTP_ACCEPT="text/event-stream",
                       **bearer, **headers)


def user_parts(*parts):
    return {"id": fresh("msg"), "role": "user", "content": list(parts)}


# --- 400 for a malformed body, 422 for what is not a RunAgentInput ------------------------------

@pytest.mark.parametrize("raw", [b"{{{", b"not json", b"[]", b'"text"', b"5"])
def test_a_body_that_is_not_a_json_object_is_a_400(client, bearer, raw):
    resp = post(client, bearer, raw)
    assert resp.status_code == 400, resp.content
    assert resp.json()["code"] == "malformed_body" and list(resp.json()["errors"]) == ["body"]
    assert not Thread.objects.exists()


# --- the wire's field paths, and what is wrong with them -------------------------------------------

def invalid(resp):
    assert resp.status_code == 422, resp.content
    data = resp.json()
    assert data["code"] == "invalid_input"
    for field, sentences in data["errors"].items():  # pydantic's union members are not the client's words
        assert "[" not in field and ".user." not in field and ".str" not in field, field
        assert all("Input should" not in s for s in sentences), sentences
    return data["errors"]


def test_a_binary_part_is_named_by_its_place_and_said_to_be_an_unknown_type(client, bearer):
    """AG-UI's older `binary` part (the Agent Framework client's ag_ui package still has it) got
    `messages.0.user.content.list[tagged-union[TextPart,...]].0` and "content.str: Must be text."."""
    part = {"type": "binary", "mimeType": "image/png", "data": "aGVsbG8="}
    errors = invalid(post(client, bearer, body(messages=[user_parts(part)])))
    assert errors == {"messages.0.content.0": [
        "Unknown type 'binary'; accepted: 'text', 'image', 'audio', 'video', 'document'."]}
    assert not Thread.objects.exists()


def test_what_is_wrong_inside_a_part_is_said_at_its_field(client, bearer):
    assert invalid(post(client, bearer, body(messages=[user_parts({"type": "text"})]))) == {
        "messages.0.content.0.text": ["This field is required."]}
    assert invalid(post(client, bearer, body(messages=[user_parts({"type": "text", "text": 5})]))) == {
        "messages.0.content.0.text": ["Must be text."]}
    assert invalid(post(client, bearer, body(messages=[user_parts("hello")]))) == {
        "messages.0.content.0": ["Must be an object."]}
    assert invalid(post(client, bearer, body(messages=[user_parts({"text": "x"})]))) == {
        "messages.0.content.0": ["Required: type."]}
    source = {"type": "image", "source": {"type": "zz"}}
    assert invalid(post(client, bearer, body(messages=[user_parts(source)]))) == {
        "messages.0.content.0.source": ["Unknown type 'zz'; accepted: 'data', 'url', 'file'."]}
    # neither text nor parts: one sentence that says both
    content = {"id": fresh("msg"), "role": "user", "content": 5}
    assert invalid(post(client, bearer, body(messages=[content]))) == {
        "messages.0.content": ["Must be one of: text, a list."]}
    role = {"id": fresh("msg"), "role": "robot", "content": "x"}
    assert invalid(post(client, bearer, body(messages=[role]))) == {"messages.0": [
        "Unknown role 'robot'; accepted: 'developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning'."]}
    call = {"id": fresh("msg"), "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "x"}}]}
    assert invalid(post(client, bearer, body(messages=[call]))) == {
        "messages.0.toolCalls.0.function.arguments": ["This field is required."]}
    # a client's snake_case field is named as it sent it
    snake = {"thread_id": fresh("t"), "run_id": 5, "messages": []}
    assert invalid(post(client, bearer, snake)) == {"run_id": ["Must be text."]}


def test_the_fields_are_said_in_the_callers_language(client, bearer):
    resp = post(client, bearer, body(messages=[user_parts({"type": "text"})]), HTTP_ACCEPT_LANGUAGE="fr")
    assert resp.json()["message"] == "RunAgentInput non valide"
    assert invalid(resp) == {"messages.0.content.0.text": ["Ce champ est obligatoire."]}


# --- state refusals: one sentence, naming the place ------------------------------------------------

def test_a_state_too_large_is_said_once(client, bearer, settings):
    settings.AGUI_STATE_MAX_BYTES = 1000
    error = refusal(post(client, bearer, body(messages=[{"id": fresh("m"), "role": "user", "content": "hi"}],
                                              state={f"k{i}": "v" * 100 for i in range(20)})))
    assert error["code"] == "state_too_large"
    assert error["message"].count("limit is") == 1 and ": /" not in error["message"], error["message"]
    assert error["message"].startswith("The shared state would grow to") and error["message"].endswith("Nothing was changed.")


def test_a_state_against_the_schema_is_said_in_our_words_at_its_place(client, bearer):
    """It was "/recipe: 5 is not of type 'object': /recipe 5 is not of type 'object'"."""
    message = [{"id": fresh("m"), "role": "user", "content": "hi"}]
    error = refusal(post(client, bearer, body(messages=message, state={"recipe": 5}), agent="recipe"))
    assert error["code"] == "state_invalid"
    assert error["message"] == "The shared state does not match the schema at /recipe: Must be an object."
    error = refusal(post(client, bearer, body(messages=message, state={"menu": []}), agent="recipe"))
    assert error["message"] == "The shared state does not match the schema: Not allowed here: menu."
    error = refusal(post(client, bearer, body(messages=message, state={"recipe": {"title": "Soup"}}), agent="recipe"))
    assert error["message"] == ("The shared state does not match the schema at /recipe: "
                                "Required: skill_level, cooking_time, ingredients, instructions.")
    error = refusal(post(client, bearer, body(messages=message, state={"recipe": 5}), agent="recipe",
                         HTTP_ACCEPT_LANGUAGE="fr"))
    assert "Doit être un objet." in error["message"] and "is not of type" not in error["message"]
    assert not Run.objects.exists()


# --- a resume's invalid edit: sentences, not a Python dict ---------------------------------------

def paused_cancellation(demo, fake_llm):
    """alice's banking thread paused on her own confirmation of cancel_subscription: (thread, request)."""
    fake_llm.push({"tool_calls": [{"id": "call_cs", "name": "cancel_subscription",
                                   "arguments": json.dumps({"subscription_id": "sub_123"})}]})
    thread = services.create_thread(demo["alice"], "banking")
    assert run_prompt(thread, demo["alice"], "Cancel my subscription sub_123").status == Run.Status.INTERRUPTED
    return thread, ApprovalRequest.objects.get(thread_ref=thread.pk, status=ApprovalRequest.Status.PENDING)


def test_an_invalid_edit_in_a_resume_is_said_field_by_field(client, bearer, demo, fake_llm):
    thread, req = paused_cancellation(demo, fake_llm)

    def answer(arguments):
        resume = [{"interruptId": req.pk, "status": "resolved", "payload": {"approved": True, "arguments": arguments}}]
        return refusal(post(client, bearer, body(thread.pk, resume=resume)))

    error = answer({"subscription_id": "x" * 100})
    assert error["code"] == "invalid_arguments"
    assert error["message"] == (  # each field by the label the editor shows it under
        "The edited arguments are not valid: Subscription: Must be at most 64 characters long."), error["message"]
    error = answer({"subscription_id": "sub_1", "zzz": 1})
    assert error["message"] == (  # one the tool does not have keeps its name
        "The edited arguments are not valid: zzz: This is not one of the tool's arguments."), error["message"]
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.PENDING


@pytest.mark.parametrize("payload", [{}, {"feedback": "no"}, {"approved": "yes"}])
def test_an_answer_that_says_no_decision_names_both_ways_to_say_one(client, bearer, demo, fake_llm, payload):
    """The refusal named payload.approved alone, though the interrupt's responseSchema offers
    `decision` first (either will do): a client built from the schema was sent the other way."""
    thread, req = paused_cancellation(demo, fake_llm)
    resume = [{"interruptId": req.pk, "status": "resolved", "payload": payload}]
    error = refusal(post(client, bearer, body(thread.pk, resume=resume)))
    assert error["code"] == "invalid_resume" and req.pk in error["message"]
    assert "decision (approve, edit, reject or respond)" in error["message"] and "approved (true or false)" in \
        error["message"], error["message"]
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.PENDING


@pytest.mark.parametrize(("payload", "said"), [
    ({"approved": False, "feedback": "x" * 5001}, "payload.feedback holds 5001 characters; at most 5000"),
    ({"approved": False, "feedback": "x" * 200_000}, "payload.feedback holds 200000 characters; at most 5000"),
    ({"approved": False, "feedback": {"a": [1, 2]}}, "payload.feedback must be text"),
    ({"approved": True, "feedback": ["list"]}, "payload.feedback must be text"),
    ({"approved": False, "feedback": 12.5}, "payload.feedback must be text"),
    ({"approved": False, "feedback": False}, "payload.feedback must be text"),
    ({"decision": "approve", "approved": 1}, "payload.approved must be true or false"),
])
def test_a_resumes_feedback_is_text_bounded_as_the_decide_api_has_it(client, bearer, demo, fake_llm, payload, said):
    """REST's decide takes a string of at most 5000 characters; a resume stored str() of anything,
    unbounded (an object as its Python repr), into the request, the audit, webhooks and the model's
    context; `approved: 1` with a decision was read as true."""
    thread, req = paused_cancellation(demo, fake_llm)
    resume = [{"interruptId": req.pk, "status": "resolved", "payload": payload}]
    events = first_events(post(client, bearer, body(thread.pk, resume=resume)))  # taken, the run would go on
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "invalid_resume", [e["type"] for e in events]
    assert said in error["message"] and req.pk in error["message"], error
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.PENDING


def test_a_resumes_feedback_up_to_the_limit_is_stored_as_sent(client, bearer, demo, fake_llm):
    thread, req = paused_cancellation(demo, fake_llm)
    # the interrupt says the bound: a client that checks its answer against responseSchema learns it first
    assert interrupt_for(req).response_schema["properties"]["feedback"]["maxLength"] == 5000
    resume = [{"interruptId": req.pk, "status": "resolved", "payload": {"approved": False, "feedback": "é" * 5000}}]
    assert post(client, bearer, body(thread.pk, resume=resume)).status_code == 200
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.REJECTED and req.feedback == "é" * 5000


def test_two_different_answers_to_one_interrupt_are_refused_and_one_answer_twice_is_one(client, bearer, demo, fake_llm):
    """The last of two answers was taken, silently: an approval then a rejection ran as the rejection."""
    thread, req = paused_cancellation(demo, fake_llm)
    yes = {"interruptId": req.pk, "status": "resolved", "payload": {"approved": True}}
    no = {"interruptId": req.pk, "status": "resolved", "payload": {"approved": False}}
    resp = post(client, bearer, body(thread.pk, resume=[yes, no]))
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.PENDING
    error = refusal(resp)
    assert error["code"] == "invalid_resume" and req.pk in error["message"]
    assert post(client, bearer, body(thread.pk, resume=[no, no])).status_code == 200  # decided before it streams
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.REJECTED


# --- methods -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path,allow", [("/agui/banking/", "GET, HEAD, POST, OPTIONS"),
                                        ("/agui/banking", "GET, HEAD, POST, OPTIONS"),
                                        ("/agui/", "GET, HEAD, OPTIONS")])
def test_a_method_not_answered_gets_405_with_allow(client, bearer, path, allow):
    for method in ("put", "delete", "patch") + (("post",) if path == "/agui/" else ()):
        resp = getattr(client, method)(path, "{}", content_type="application/json", **bearer)
        assert resp.status_code == 405 and resp["Allow"] == allow, (method, resp.status_code, resp.content)
        assert resp.json()["code"] == "method_not_allowed"
    options = client.options(path, **bearer)
    assert options.status_code == 204 and options["Allow"] == allow


@pytest.mark.parametrize("path", ["/agui/banking/", "/agui/"])
def test_head_is_answered_as_get_without_a_body(client, bearer, path):
    get, head = client.get(path, **bearer), client.head(path, **bearer)
    assert get.status_code == head.status_code == 200 and head.content == b""
    assert head["Content-Type"] == get["Content-Type"] == "application/json"
    assert int(head["Content-Length"]) == len(get.content)
    assert client.head(path).status_code == 401


def test_a_cross_origin_preflight_is_not_granted(client):
    """No CORS (README "Security"): a browser on another site is not let in."""
    resp = client.options("/agui/banking/", HTTP_ORIGIN="https://elsewhere.example",
                          HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
                          HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type")
    assert resp.status_code == 204 and "POST" in resp["Allow"]
    assert not any(h.lower().startswith("access-control-") for h in resp.headers)


def test_an_unknown_agent_is_a_404_that_lists_the_agents_only_to_a_signed_in_caller(client, bearer):
    """A caller not signed in hears 401 whatever the name: a 404 for an unknown agent against a 401
    for a known one told anyone which agents exist."""
    for name in ("nope", "banking"):
        for resp in (client.post(f"/agui/{name}/", "{}", content_type="application/json"),
                     client.get(f"/agui/{name}/"),
                     client.post(f"/agui/{name}/", "{}", content_type="application/json",
                                 HTTP_AUTHORIZATION="Bearer wrong")):
            assert resp.status_code == 401 and "agents" not in resp.json(), resp.content
            assert b"banking" not in resp.content and b"nope" not in resp.content
    resp = client.post("/agui/nope/", "{}", content_type="application/json", **bearer)
    assert resp.status_code == 404 and "banking" in resp.json()["agents"]
