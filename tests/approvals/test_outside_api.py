"""POST /api/approvals/ for agents that run elsewhere: the same policy engine and inbox, an
Idempotency-Key, a caller's JSON Schema for tools this project does not know, ?wait and the
outcome reported once. The long-poll and the Python client against the live stack:
tests/integration/test_python_client.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent, OutsideCall

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"email": {"type": "string", "format": "email"},
                                           "count": {"type": "integer", "minimum": 1}},
          "required": ["email"], "additionalProperties": False}


def body(**extra):
    return {"tool_name": "crm.delete_contact", "arguments": {"email": "a@example.com"}, "schema": SCHEMA,
            "description": "Delete the contact a@example.com", "reason": "the user asked", **extra}


def test_unknown_tool_is_asked_of_reviewers_at_high_risk(api):
    resp = api("alice").post("/api/approvals/", body(thread="outside-t1", run="r1",
                                                     callback_url="https://hooks.example.com/x"), format="json")
    assert resp.status_code == 201, resp.content
    data = resp.json()
    assert data["status"] == "pending" and data["approver_group"] == "reviewers" and data["risk"] == "high"
    assert data["thread"] == "outside-t1" and data["run"] == "r1" and data["requester"] == "alice"
    assert data["outside"]["callback_url"] == "https://hooks.example.com/x" and data["outside"]["outcome"] == ""
    assert api("alice").get(f"/api/approvals/{data['id']}/").json() == data  # 201 shows what GET shows
    # a reviewer sees it in the list and on the inbox page (no thread page to link to is fine)
    assert data["id"] in {r["id"] for r in api("rita").get("/api/approvals/").json()["results"]}
    assert api("bob").get(f"/api/approvals/{data['id']}/").status_code == 404  # not his
    req = ApprovalRequest.objects.get(pk=data["id"])
    assert req.schema == SCHEMA and AuditEvent.objects.filter(request=req, action="requested").exists()


def test_inbox_pages_cope_with_no_thread(api, client, demo):
    data = api("alice").post("/api/approvals/", body(), format="json").json()
    services.save_policy("crm.drop_table", {"mode": "deny", "approver_kind": "requester"}, demo["admin"])
    denied = api("alice").post("/api/approvals/", {"tool_name": "crm.drop_table", "arguments": {}}, format="json")
    client.force_login(demo["rita"])
    listing = client.get("/inbox/")
    assert listing.status_code == 200 and data["id"].encode() in listing.content
    page = client.get(f"/inbox/{data['id']}/")
    assert page.status_code == 200 and b"a@example.com" in page.content
    client.force_login(demo["admin"])  # a denied request (never pending) in the decisions and on its page
    assert denied.json()["id"].encode() in client.get("/inbox/?status=denied&scope=all").content
    assert client.get(f"/inbox/{denied.json()['id']}/").status_code == 200


def test_decision_answers_with_final_arguments_and_feedback(api):
    data = api("alice").post("/api/approvals/", body(), format="json").json()
    resp = api("rita").post(f"/api/approvals/{data['id']}/decide/",
                            {"decision": "approve", "feedback": "ok, once"}, format="json")
    assert resp.status_code == 200, resp.content
    answer = api("alice").get(f"/api/approvals/{data['id']}/?wait=5").json()  # answered: no waiting
    assert answer["status"] == "approved" and answer["final_arguments"] == {"email": "a@example.com"}
    assert answer["feedback"] == "ok, once"


def test_a_reviewer_edits_against_the_callers_schema(api):
    data = api("alice").post("/api/approvals/", body(), format="json").json()
    bad = api("rita").post(f"/api/approvals/{data['id']}/decide/",
                           {"decision": "approve", "arguments": {"email": "b@example.com", "count": 0}}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_arguments" and "count" in bad.json()["arguments"]
    assert ApprovalRequest.objects.get(pk=data["id"]).status == "pending"
    ok = api("rita").post(f"/api/approvals/{data['id']}/decide/",
                          {"decision": "approve", "arguments": {"email": "b@example.com"}}, format="json")
    assert ok.status_code == 200, ok.content
    answer = api("alice").get(f"/api/approvals/{data['id']}/").json()
    assert answer["status"] == "modified" and answer["final_arguments"] == {"email": "b@example.com"}
    assert answer["arguments"] == {"email": "a@example.com"}


def test_idempotency_key(api):
    alice = api("alice")
    first = alice.post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = alice.post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 201 and again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other = alice.post("/api/approvals/", body(arguments={"email": "b@example.com"}), format="json",
                       HTTP_IDEMPOTENCY_KEY="k-1")
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    # a key is the requester's own: bob's k-1 is another request
    bobs = api("bob").post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert bobs.status_code == 201 and bobs.json()["id"] != first.json()["id"]
    assert ApprovalRequest.objects.count() == 2 and OutsideCall.objects.count() == 2


def test_policy_never_and_deny(api, demo):
    services.save_policy("crm.lookup", {"mode": "never", "approver_kind": "requester"}, demo["admin"])
    services.save_policy("crm.drop_table", {"mode": "deny", "approver_kind": "requester"}, demo["admin"])
    ok = api("alice").post("/api/approvals/", {"tool_name": "crm.lookup", "arguments": {"q": "x"}}, format="json")
    assert ok.status_code == 201, ok.content
    assert ok.json()["status"] == "approved" and ok.json()["final_arguments"] == {"q": "x"}
    assert ok.json()["matched_rule"] == "policy: mode never"
    no = api("alice").post("/api/approvals/", {"tool_name": "crm.drop_table", "arguments": {}}, format="json")
    assert no.status_code == 201 and no.json()["status"] == "denied"
    assert no.json()["matched_rule"] == "policy: mode deny" and "mode deny" in no.json()["feedback"]
    # a tool of this project goes through its own validator and policy (transfer_money: finance decides)
    own = api("alice").post("/api/approvals/", {"tool_name": "transfer_money", "arguments": {
        "from_account": "1234567890", "to_account": "0987654321", "amount": 10, "currency": "USD"}}, format="json")
    assert own.status_code == 201, own.content
    assert own.json()["status"] == "pending" and own.json()["approver_group"] == "finance"


@pytest.mark.parametrize("bad, code, field", [
    ({"schema": None}, "unknown_tool", "schema"),
    ({"arguments": {"email": 5, "extra": 1}}, "invalid_arguments", "arguments"),
    ({"schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "invalid_schema", "schema"),
    ({"callback_url": "ftp://example.com/x"}, None, "callback_url"),
    ({"tool_name": "no spaces"}, None, "tool_name"),
])
def test_bad_input_is_a_clear_400_and_stores_nothing(api, bad, code, field):
    data = {k: v for k, v in body(**bad).items() if v is not None}
    resp = api("alice").post("/api/approvals/", data, format="json")
    assert resp.status_code == 400, resp.content
    if code:
        assert resp.json()["code"] == code
    assert field in resp.json() or field in str(resp.json()), resp.json()
    assert not ApprovalRequest.objects.exists() and not OutsideCall.objects.exists()


def test_wait_above_the_limit_is_400(api):
    data = api("alice").post("/api/approvals/", body(), format="json").json()
    for bad in ("61", "-1", "soon"):
        resp = api("alice").get(f"/api/approvals/{data['id']}/?wait={bad}")
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_wait", bad
    assert api("bob").get(f"/api/approvals/{data['id']}/?wait=1").status_code == 404  # not his: no waiting


def test_a_bad_wait_is_judged_after_who_asks_and_whether_they_may_see_the_request(api, client):
    """An out-of-range ?wait was a 400 before anyone was signed in: an anonymous caller, or one asking
    of a request not theirs, learnt the parameter's rules before hearing it was not theirs to ask."""
    data = api("alice").post("/api/approvals/", body(), format="json").json()
    anonymous = client.get(f"/api/approvals/{data['id']}/?wait=999")
    assert anonymous.status_code == 401 and anonymous.json()["code"] != "invalid_wait"
    assert api("bob").get(f"/api/approvals/{data['id']}/?wait=999").status_code == 404
    assert api("alice").get("/api/approvals/no-such-request/?wait=999").status_code == 404
    assert api("alice").get(f"/api/approvals/{data['id']}/?wait=999").status_code == 400


def test_outcome_once_then_409(api, demo):
    alice = api("alice")
    data = alice.post("/api/approvals/", body(), format="json").json()
    early = alice.post(f"/api/approvals/{data['id']}/outcome/", {"outcome": "succeeded"}, format="json")
    assert early.status_code == 409 and early.json()["code"] == "not_approved"
    services.decide(data["id"], demo["rita"], "approve")
    assert api("rita").post(f"/api/approvals/{data['id']}/outcome/", {"outcome": "failed"},
                            format="json").status_code == 403  # only the agent that asked
    assert alice.post(f"/api/approvals/{data['id']}/outcome/", {"outcome": "maybe"}, format="json").status_code == 400
    resp = alice.post(f"/api/approvals/{data['id']}/outcome/", {"outcome": "failed", "detail": "CRM said 500"},
                      format="json")
    assert resp.status_code == 200 and resp.json()["outside"]["outcome"] == "failed"
    assert resp.json()["outside"]["outcome_detail"] == "CRM said 500"
    again = alice.post(f"/api/approvals/{data['id']}/outcome/", {"outcome": "succeeded"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "outcome_already_reported"
    event = AuditEvent.objects.get(request_id=data["id"], action="outcome_reported")
    assert event.actor == demo["alice"] and event.after == {"outcome": "failed", "detail": "CRM said 500"}
    # the request's page says it (it said only "Approved"), in the agent's own words
    from django.test import Client

    reader = Client()
    reader.force_login(demo["rita"])
    page = reader.get(f"/inbox/{data['id']}/").content.decode()
    assert 'class="ran ran-failed"' in page and "The agent reports it did not work: CRM said 500" in page


def test_outcomes_show_in_the_stats(api, client, demo):
    data = api("alice").post("/api/approvals/", body(), format="json").json()
    services.decide(data["id"], demo["rita"], "approve")
    api("alice").post(f"/api/approvals/{data['id']}/outcome/", {"outcome": "succeeded"}, format="json")
    client.force_login(demo["rita"])
    page = client.get("/inbox/stats/")
    assert page.status_code == 200
    assert page.context["outcomes"] == [{"tool": "crm.delete_contact", "succeeded": 1, "failed": 0, "unknown": 0}]
    assert b"How approved calls went" in page.content


def test_anonymous_may_not_create(client):
    assert client.post("/api/approvals/", body(), content_type="application/json").status_code in (401, 403)
    assert not ApprovalRequest.objects.exists()


def test_openapi_documents_the_outside_api(api):
    schema = api("alice").get("/api/schema/?format=json").json()
    approvals = schema["paths"]["/api/approvals/"]
    assert "post" in approvals and any(p["name"] == "Idempotency-Key" for p in approvals["post"]["parameters"])
    detail = schema["paths"]["/api/approvals/{id}/"]["get"]
    assert any(p["name"] == "wait" for p in detail["parameters"])
    assert "post" in schema["paths"]["/api/approvals/{id}/outcome/"]


def test_an_admin_sets_the_unknown_tools_policy(api):
    first = api("alice").post("/api/approvals/", body(), format="json").json()
    assert first["status"] == "pending" and first["approver_group"] == "reviewers"
    resp = api("admin").put("/api/policies/crm.delete_contact/", {"mode": "never", "approver_kind": "requester"},
                            format="json")
    assert resp.status_code == 201, resp.content
    again = api("alice").post("/api/approvals/", body(), format="json").json()
    assert again["status"] == "approved" and again["matched_rule"] == "policy: mode never"


def test_an_outside_thread_ref_never_attaches_to_our_conversations(api, client, demo):
    """The caller's `thread` is its own name: one that happens to be the id of bob's chat here
    neither blocks that chat, nor shows in it, nor opens it to the reviewers."""
    from agents import services as agent_services

    thread = agent_services.create_thread(demo["bob"], "banking", thread_id="shared-name-1")
    data = api("alice").post("/api/approvals/", body(thread="shared-name-1", run="r-9"), format="json").json()
    assert data["thread"] == "shared-name-1" and data["run"] == "r-9"  # shown as the caller gave them
    assert agent_services.pending_approvals(thread) == []
    req = ApprovalRequest.objects.get(pk=data["id"])
    assert req.thread_ref == "" and req.run_ref == ""
    client.force_login(demo["rita"])
    assert client.get(f"/inbox/{data['id']}/conversation/").status_code == 404
    assert b"/conversation/" not in client.get(f"/inbox/{data['id']}/").content


def test_the_thread_filter_finds_an_outside_agents_requests_by_the_thread_they_show(api, demo):
    """A request shows `thread` as the outside agent gave it, but ?thread= (and ?search=) looked only at
    our conversations' ref: an agent listing its own thread's requests got none of them."""
    mine = api("alice").post("/api/approvals/", body(thread="crm-conversation-7"), format="json").json()
    api("alice").post("/api/approvals/", body(thread="crm-conversation-8", arguments={"email": "b@example.com"}),
                      format="json")
    ours = api("alice").post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    for query in ("thread=crm-conversation-7", "search=crm-conversation-7"):
        listed = api("alice").get(f"/api/approvals/?{query}")
        assert listed.status_code == 200 and [r["id"] for r in listed.json()["results"]] == [mine["id"]], query
        assert listed.json()["results"][0]["thread"] == "crm-conversation-7"
    assert api("rita").get("/api/approvals/?thread=crm-conversation-7").json()["count"] == 1  # a reviewer's list too
    assert api("bob").get("/api/approvals/?thread=crm-conversation-7").json()["count"] == 0  # not his to see
    assert api("alice").get(f"/api/approvals/?thread={ours}").json()["count"] == 0


def test_a_rejected_call_is_not_asked_again_in_the_same_thread_unless_the_person_wrote_since(api, demo):
    """No circumvention for agents that run elsewhere: the same call (equivalent arguments, by hash)
    in the caller's own thread is rejected again at once with the reviewer's feedback, nobody asked;
    another thread, other arguments, another requester, or a person who wrote since is asked again."""
    alice, rita = api("alice"), api("rita")
    first = alice.post("/api/approvals/", body(thread="t-outside"), format="json").json()
    assert rita.post(f"/api/approvals/{first['id']}/decide/", {"decision": "reject", "feedback": "Not this contact"},
                     format="json").status_code == 200
    asked_before = ApprovalRequest.objects.filter(status="pending").count()

    # key order and spacing do not matter: the same arguments by hash
    again = alice.post("/api/approvals/", body(thread="t-outside", arguments={"email": "a@example.com"}),
                       format="json")
    assert again.status_code == 201, again.content
    data = again.json()
    assert data["status"] == "rejected" and data["feedback"] == "Not this contact"
    assert "already rejected in this thread" in data["matched_rule"]
    assert ApprovalRequest.objects.filter(status="pending").count() == asked_before  # nobody was asked
    assert AuditEvent.objects.get(request_id=data["id"], action="requested").after["repeat_of"] == first["id"]

    def asked(**extra):
        resp = alice.post("/api/approvals/", body(**extra), format="json")
        assert resp.status_code == 201, resp.content
        return resp.json()["status"] == "pending"

    assert asked(thread="t-other")  # another thread
    assert asked(thread="t-outside", arguments={"email": "b@example.com"})  # another call
    assert asked()  # no thread given: nothing to compare with
    assert asked(thread="t-outside", user_wrote_at=timezone.now().isoformat())  # she wrote after the rejection
    # she wrote after the reviewer's rejection and before the agent's retry the inbox refused itself:
    # that refusal is no newer rejection
    wrote = ApprovalRequest.objects.get(pk=first["id"]).decided_at + timedelta(microseconds=1)
    assert wrote < ApprovalRequest.objects.get(pk=data["id"]).decided_at
    assert asked(thread="t-outside", user_wrote_at=wrote.isoformat())
    assert not asked(thread="t-outside", user_wrote_at=(timezone.now() - timedelta(hours=1)).isoformat())
    bobs = api("bob").post("/api/approvals/", body(thread="t-outside"), format="json").json()
    assert bobs["status"] == "pending"  # a thread name is the requester's own


def test_two_retries_racing_with_one_key_make_one_request(api, demo, monkeypatch):
    """The race the first lookup cannot see: another attempt with the same Idempotency-Key commits
    between this one's lookup and its insert. The unique key turns the insert away and the answer is
    the other attempt's request (on PostgreSQL a concurrent insert waits for the other to commit)."""
    from approvals import outside

    alice = api("alice")
    first = alice.post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="race-1").json()
    real_retry, lookups = outside._retry, []

    def lookup_that_loses_the_race(*args):
        lookups.append(args)
        return None if len(lookups) == 1 else real_retry(*args)

    monkeypatch.setattr(outside, "_retry", lookup_that_loses_the_race)
    again = alice.post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="race-1")
    assert again.status_code == 200 and again.json()["id"] == first["id"], again.content
    assert len(lookups) == 2  # missed, inserted, refused by the unique key, found
    assert ApprovalRequest.objects.count() == 1 and OutsideCall.objects.count() == 1
    assert AuditEvent.objects.filter(action="requested").count() == 1  # the refused insert left no trace


def test_a_project_tool_is_asked_only_for_the_callers_own_objects(api, client, demo):
    """Tools act only on the requester's objects: bob asked for a transfer out of alice's account
    and finn could approve it as it stood (an edit of it was refused, the request was not)."""
    transfer = {"tool_name": "transfer_money", "description": "routine", "arguments": {
        "from_account": "1234567890", "to_account": "0987654321", "amount": 500, "currency": "USD"}}
    resp = api("bob").post("/api/approvals/", transfer, format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["code"] == "invalid_arguments" and "not bob" in str(resp.json()), resp.json()
    assert not ApprovalRequest.objects.exists() and not OutsideCall.objects.exists()
    # the owner asks: it waits for finance, and the inbox shows whose account it is
    resp = api("alice").post("/api/approvals/", transfer, format="json")
    assert resp.status_code == 201 and resp.json()["approver_group"] == "finance", resp.content
    req = ApprovalRequest.objects.get(pk=resp.json()["id"])
    assert req.context["objects"] and req.context["outside"] == {"thread": "", "run": ""}
    client.force_login(demo["finn"])
    page = client.get(f"/inbox/{req.pk}/")
    assert page.status_code == 200 and b"alice" in page.content


def test_the_same_arguments_are_the_same_json_not_equal_in_python(api, demo):
    """An outside tool's arguments are checked by its JSON Schema, which keeps them as sent: `true`
    for `1` passed as no edit where edits are not allowed (Python's True == 1), and an approval of
    `1.0` for `1` counted for nobody (its digest named other arguments)."""
    reviewers = {"mode": "always", "approver_kind": "group", "approver_group": "reviewers", "risk": "high"}
    assert api("admin").put("/api/policies/crm.flag/", {**reviewers, "allowed_decisions": ["approve", "reject"]},
                             format="json").status_code in (200, 201)
    flag = api("bob").post("/api/approvals/", {"tool_name": "crm.flag", "schema": {"type": "object"},
                                               "arguments": {"dry_run": 1, "limit": 0}}, format="json").json()
    resp = api("rita").post(f"/api/approvals/{flag['id']}/decide/",
                            {"decision": "approve", "arguments": {"dry_run": True, "limit": False}}, format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "decision_not_allowed", resp.content
    resp = api("rita").post(f"/api/approvals/{flag['id']}/decide/",
                            {"decision": "approve", "arguments": {"dry_run": 1, "limit": 0}}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "approved", resp.content

    assert api("admin").put("/api/policies/crm.q/", {**reviewers, "required_approvals": 2},
                            format="json").status_code in (200, 201)
    demo["finn"].groups.add(*demo["rita"].groups.filter(name="reviewers"))
    quorum = api("bob").post("/api/approvals/", {
        "tool_name": "crm.q", "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "arguments": {"n": 1}}, format="json").json()
    first = api("rita").post(f"/api/approvals/{quorum['id']}/decide/",
                             {"decision": "approve", "arguments": {"n": 1.0}}, format="json").json()
    assert first["status"] == "pending" and first["approvals"] == 1  # an edit to 1.0, and rita approves it
    done = api("finn").post(f"/api/approvals/{quorum['id']}/decide/", {"decision": "approve"}, format="json").json()
    assert done["status"] == "modified" and done["approvals"] == 2 and done["final_arguments"] == {"n": 1.0}


def test_a_callback_to_an_internal_address_is_refused_when_asked(api, settings):
    """An address outside the allowed networks is known now; it was taken, and every delivery to it was
    refused and retried for hours where the agent could not see why. A name is judged at each delivery."""
    settings.AGUI_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    for url in ("http://10.9.8.7/x", "http://169.254.169.254/latest", "http://[::1]:9/x",
                "http://[::ffff:0:a9fe:a9fe]/latest/"):
        refused = api("bob").post("/api/approvals/", body(callback_url=url), format="json")
        assert refused.status_code == 400, (url, refused.content)
        assert refused.json()["callback_url"] == ["an internal address this site does not call"]
    # a port no delivery could use: taken, it made no delivery at all, and said nothing
    refused = api("bob").post("/api/approvals/", body(callback_url="http://1.1.1.1:99999/x"), format="json")
    assert refused.status_code == 400 and refused.json()["callback_url"], refused.content
    assert not ApprovalRequest.objects.exists()
    for url in ("http://127.0.0.1:9/x", "https://hooks.example.com/x", "http://internal.invalid/x"):
        assert api("bob").post("/api/approvals/", body(callback_url=url), format="json").status_code == 201, url


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+01:00"])
def test_a_user_wrote_at_no_database_stores_is_a_400(api, moment):
    """A well-formed moment outside years 1-9999 once in UTC (DRF's DateTimeField refuses it: a guard,
    as the audit filters' own parsing of such moments was a 500)."""
    resp = api("bob").post("/api/approvals/", body(thread="t1", user_wrote_at=moment), format="json")
    assert resp.status_code == 400 and "user_wrote_at" in str(resp.json()), resp.content
    assert not ApprovalRequest.objects.exists()


@pytest.mark.parametrize("fields,field", [
    ({"arguments.note": "b\x00c"}, "arguments.note"),  # a DictField's value, sent as a form
    ({"arguments.no\x00te": "b"}, ""),  # a key
])
def test_a_form_body_passes_the_json_gate_too(api, fields, field):
    """The API parses forms as well as JSON: a NUL sent as a form field reached the request's JSON
    column (a 500 on PostgreSQL, which stores none) around the gate JSON bodies pass."""
    alice = api("alice")
    form = {"tool_name": "notes.write", "schema.type": "object", **fields}
    resp = alice.post("/api/approvals/", form)  # multipart, as a form
    assert resp.status_code == 400 and resp.json()["code"] == "nul_character", resp.content
    assert resp.json()["field"] == field
    assert resp.json() == alice.post("/api/approvals/", form, format="json").json()  # as JSON: the same answer
    assert not ApprovalRequest.objects.exists()
    assert alice.post("/api/approvals/", {"tool_name": "notes.write", "schema.type": "object",
                                          "arguments.note": "fine"}).status_code == 201


def test_the_agent_that_asked_withdraws_its_pending_request(api, demo):
    """An agent that stopped waiting (StillPending, its user gone) had no way to take its request back:
    a reviewer could still approve a call that would never run. It withdraws it; nobody else may."""
    from tests.helpers import transfer_request

    made = api("alice").post("/api/approvals/", body(), format="json").json()
    path = f"/api/approvals/{made['id']}/withdraw/"
    assert api("rita").post(path, {}, format="json").status_code == 403  # a reviewer who sees it
    assert api("bob").post(path, {}, format="json").status_code == 404  # not his to see
    gone = api("alice").post(path, {"reason": "the user closed the chat"}, format="json")
    assert gone.status_code == 200 and gone.json()["status"] == "cancelled", gone.content
    assert gone.json()["feedback"] == "the user closed the chat"
    assert AuditEvent.objects.filter(request_id=made["id"], action="cancelled", actor=demo["alice"]).exists()
    again = api("alice").post(path, {}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"
    ours = transfer_request(demo["alice"])
    refused = api("alice").post(f"/api/approvals/{ours.pk}/withdraw/", {}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "not_outside"



@pytest.mark.parametrize("name", ["banking", " Banking ", "SUPPORT"])
def test_an_outside_agent_may_not_take_the_name_of_an_agent_of_this_project(api, name):
    """The inbox shows a request "via <agent>" and filters by it: a service account calling itself
    "banking" had its requests pass for the project's banking agent's. Nothing is recorded."""
    resp = api("alice").post("/api/approvals/", body(agent_name=name), format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["agent_name"] == [
        f"“{name.strip()}” is the name of an agent of this project: reviewers would take this agent for it. "
        "Give your agent a name of its own."]
    assert not ApprovalRequest.objects.exists()
    made = api("alice").post("/api/approvals/", body(agent_name="crm-bot"), format="json")
    assert made.status_code == 201 and made.json()["agent_name"] == "crm-bot"


def test_an_account_waits_on_a_bounded_number_of_requests(api, settings):
    """Any signed-in account may ask, and every request is mailed to each of its reviewers: an end
    user filed 25 in 2 s, and nothing stopped 25,000."""
    settings.AGUI_MAX_PENDING_PER_REQUESTER = 3
    asked = [api("alice").post("/api/approvals/", body(arguments={"email": f"{i}@example.com"}), format="json")
             for i in range(4)]
    assert [r.status_code for r in asked] == [201, 201, 201, 429]
    assert asked[-1].json()["code"] == "too_many_pending" and "3 requests" in asked[-1].json()["message"]
    assert ApprovalRequest.objects.filter(requester__username="alice").count() == 3  # the fourth stored nothing
    assert api("bob").post("/api/approvals/", body(), format="json").status_code == 201  # per account
    # a decided one makes room
    api("rita").post(f"/api/approvals/{asked[0].json()['id']}/decide/", {"decision": "approve"}, format="json")
    assert api("alice").post("/api/approvals/", body(arguments={"email": "x@example.com"}), format="json").status_code == 201


def test_an_account_asks_a_bounded_number_of_times_an_hour_whatever_became_of_its_requests(api, settings):
    """The pending bound alone let one account ask and withdraw without end (300 mails to the
    reviewers in 8 s), and requests policy answers at once (a deny) were never counted: each cost
    rows and a signed callback. Every new request of the last hour counts; a retry does not."""
    from datetime import timedelta

    from django.utils import timezone

    from approvals.models import OutsideCall

    settings.AGUI_MAX_REQUESTS_PER_HOUR = 3
    first = api("bob").post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    api("bob").post(f"/api/approvals/{first.json()['id']}/withdraw/", {}, format="json")
    denied = api("bob").post("/api/approvals/", {"tool_name": "delete_directory", "arguments": {"path": "x"}},
                             format="json")
    assert denied.status_code == 201 and denied.json()["status"] == "denied", denied.content  # policy: deny
    third = api("bob").post("/api/approvals/", body(arguments={"email": "c@example.com"}), format="json")
    assert third.status_code == 201
    refused = api("bob").post("/api/approvals/", body(arguments={"email": "d@example.com"}), format="json")
    assert refused.status_code == 429 and refused.json()["code"] == "too_many_requests", refused.content
    assert refused.json()["message"] == ("This account asked for 3 approvals in the last hour, the most one account "
                                         "may; ask again later.")
    assert 3500 < int(refused["Retry-After"]) <= 3601
    assert OutsideCall.objects.filter(requester__username="bob").count() == 3  # nothing more stored
    again = api("bob").post("/api/approvals/", body(), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]  # a retry is the same request
    assert api("alice").post("/api/approvals/", body(), format="json").status_code == 201  # per account
    OutsideCall.objects.filter(requester__username="bob").update(created_at=timezone.now() - timedelta(hours=2))
    assert api("bob").post("/api/approvals/", body(arguments={"email": "f@example.com"}), format="json").status_code == 201


def test_a_callback_urls_secrets_are_the_requesters_and_the_admins(api):
    """A callback URL often carries what authorises the call back (a token in its query, a password):
    every reviewer of the request read it whole. They see where it goes; the requester and admins all of it."""
    url = "https://hook:s3cret@hooks.example.com:8443/in/alice?token=t0k3n#frag"
    rid = api("alice").post("/api/approvals/", body(callback_url=url), format="json").json()["id"]
    assert api("alice").get(f"/api/approvals/{rid}/").json()["outside"]["callback_url"] == url
    assert api("admin").get(f"/api/approvals/{rid}/").json()["outside"]["callback_url"] == url
    for reviewer in ("rita", "finn"):  # reviewers decides an unknown tool
        seen = api(reviewer).get(f"/api/approvals/{rid}/").json()["outside"]["callback_url"]
        assert seen == "https://hooks.example.com:8443/in/alice"
    listed = {r["id"]: r for r in api("rita").get("/api/approvals/").json()["results"]}
    assert listed[rid]["outside"]["callback_url"] == "https://hooks.example.com:8443/in/alice"
