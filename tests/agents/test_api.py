import pytest

from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/api/threads/", "/api/approvals/", "/api/runs/"])
def test_anonymous_gets_no_data(client, url):
    resp = client.get(url)
    assert resp.status_code in (401, 403)
    assert "results" not in resp.json() and "message" in resp.json()


def test_token_and_bearer_both_authenticate(api):
    assert api("alice", keyword="Token").get("/api/threads/").status_code == 200
    assert api("alice", keyword="Bearer").get("/api/threads/").status_code == 200


def test_create_thread_validates_agent(api):
    alice = api("alice")
    resp = alice.post("/api/threads/", {"agent": "nope"}, format="json")
    assert resp.status_code == 400 and "agent" in resp.json()
    resp = alice.post("/api/threads/", {"agent": "banking"}, format="json")
    assert resp.status_code == 201 and resp.json()["agent"] == "banking" and resp.json()["id"]


def test_end_users_never_see_each_others_threads(api):
    bob_thread = api("bob").post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    alice = api("alice")
    assert alice.get(f"/api/threads/{bob_thread}/").status_code == 404
    assert alice.get(f"/api/threads/{bob_thread}/messages/").status_code == 404
    assert alice.post(f"/api/threads/{bob_thread}/messages/", {"content": "hi"}, format="json").status_code == 404
    assert alice.delete(f"/api/threads/{bob_thread}/").status_code == 404
    assert bob_thread not in [t["id"] for t in alice.get("/api/threads/").json()["results"]]


def test_posting_a_message_starts_a_run_and_lists_in_order(api, monkeypatch):
    queued = []
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: queued.append(run_id))
    monkeypatch.setattr("agents.runtime.events.append", lambda *a, **k: "1-0")
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    resp = alice.post(f"/api/threads/{thread}/messages/", {"content": "hello"}, format="json")
    assert resp.status_code == 202
    body = resp.json()
    assert body["status"] == "queued" and body["message_id"]
    assert alice.get(f"/api/runs/{body['run_id']}/").json()["status"] == "queued"
    messages = alice.get(f"/api/threads/{thread}/messages/").json()
    assert [(m["role"], m["content"], m["run"]) for m in messages] == [("user", "hello", body["run_id"])]
    # a second message while the run is active is refused, not queued behind it
    resp = alice.post(f"/api/threads/{thread}/messages/", {"content": "again"}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "run_active"
    assert alice.post(f"/api/threads/{thread}/messages/", {"content": ""}, format="json").status_code == 400


def test_runs_filter_by_chat_by_the_run_they_continue_and_by_status(api, demo):
    """A Stop or a decision of a paused run is carried out by the run that continues it: a client finds
    that run by `parent_run`. Another account's ids answer as unknown ones do."""
    from agents.models import Run, Thread

    mine = Thread.objects.create(owner=demo["alice"], agent="banking")
    other = Thread.objects.create(owner=demo["alice"], agent="banking")
    bobs = Thread.objects.create(owner=demo["bob"], agent="banking")
    paused = Run.objects.create(thread=mine, status=Run.Status.INTERRUPTED)
    stopped = Run.objects.create(thread=mine, parent_run=paused, status=Run.Status.CANCELLED)
    Run.objects.create(thread=other, status=Run.Status.SUCCEEDED)
    bobs_run = Run.objects.create(thread=bobs, status=Run.Status.SUCCEEDED)
    alice = api("alice")

    def ids(query):
        answer = alice.get(f"/api/runs/?{query}")
        assert answer.status_code == 200, answer.content
        return {r["id"] for r in answer.json()["results"]}

    assert ids(f"thread={mine.pk}") == {paused.pk, stopped.pk}
    assert ids(f"parent_run={paused.pk}") == {stopped.pk}
    assert ids(f"thread={mine.pk}&status=cancelled") == {stopped.pk}
    assert ids(f"thread={bobs.pk}") == ids("thread=no-such-chat") == set()
    assert ids(f"parent_run={bobs_run.pk}") == set()
    assert alice.get("/api/runs/?status=sleeping").status_code == 400


def test_decide_api_statuses(api, demo):
    req = transfer_request(demo["alice"])
    url = f"/api/approvals/{req.pk}/decide/"
    # alice requested it: she can see it but not decide it; bob cannot even see it
    assert api("alice").get(f"/api/approvals/{req.pk}/").json()["can_decide"] is False
    assert api("alice").post(url, {"decision": "approve"}, format="json").status_code == 403
    assert api("bob").post(url, {"decision": "approve"}, format="json").status_code == 404
    finn = api("finn")
    bad = finn.post(url, {"decision": "approve", "arguments": {**req.arguments, "amount": "lots"}}, format="json")
    assert bad.status_code == 400 and "amount" in bad.json()["arguments"]
    assert finn.get(f"/api/approvals/{req.pk}/").json()["status"] == "pending"
    assert finn.post(url, {"decision": "maybe"}, format="json").status_code == 400
    assert finn.post(url, {"decision": "reject"}, format="json").json()["code"] == "feedback_required"
    ok = finn.post(url, {"decision": "reject", "feedback": "no"}, format="json")
    assert ok.status_code == 200 and ok.json()["status"] == "rejected"
    again = finn.post(url, {"decision": "approve"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"


def test_approvals_list_is_scoped(api, demo):
    transfer_request(demo["alice"])
    assert api("finn").get("/api/approvals/?status=pending").json()["count"] == 1
    assert api("rita").get("/api/approvals/?status=pending").json()["count"] == 0  # not finance
    assert api("bob").get("/api/approvals/").json()["count"] == 0
    assert api("admin").get("/api/approvals/").json()["count"] == 1


def test_openapi_schema_is_served(api):
    resp = api("admin").get("/api/schema/")
    assert resp.status_code == 200 and b"/api/approvals/{id}/decide/" in resp.content
