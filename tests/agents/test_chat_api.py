"""REST behind the chat page: rename / delete a thread (own only), retry a failed run."""

import json

import pytest

from agents.llm.scripted.state import CARBONARA
from agents.models import Message, Run, Thread
from agents.services import start_run
from approvals.models import ApprovalRequest
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet_runs(monkeypatch):
    """start_run's on-commit side effects (stream append, Celery task) recorded instead of run."""
    queued = []
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: queued.append(run_id))
    monkeypatch.setattr("agents.runtime.events.append", lambda *a, **k: "1-0")
    return queued


def test_rename_own_thread_but_not_its_agent_nor_anothers(api):
    alice, bob = api("alice"), api("bob")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    resp = alice.patch(f"/api/threads/{thread}/", {"title": "Rent for May"}, format="json")
    assert resp.status_code == 200 and resp.json()["title"] == "Rent for May"
    assert Thread.objects.get(pk=thread).title == "Rent for May"

    resp = alice.patch(f"/api/threads/{thread}/", {"agent": "recipe"}, format="json")
    assert resp.status_code == 400 and "agent" in resp.json()
    assert Thread.objects.get(pk=thread).agent == "banking"

    assert bob.patch(f"/api/threads/{thread}/", {"title": "mine now"}, format="json").status_code == 404
    assert bob.delete(f"/api/threads/{thread}/").status_code == 404
    assert Thread.objects.get(pk=thread).title == "Rent for May"


def test_a_thread_keeps_its_id_and_takes_back_what_get_gave(api):
    """A PATCH or PUT naming another id saved the thread under it: a copy of the row (its title,
    none of its messages) under an id never claimed; one naming its own id, as GET gives it, was
    refused as taken."""
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking", "title": "Rent"}, format="json").json()
    moved = alice.patch(f"/api/threads/{thread['id']}/", {"id": "elsewhere"}, format="json")
    assert moved.status_code == 400 and "id" in moved.json()
    assert list(Thread.objects.values_list("pk", flat=True)) == [thread["id"]]
    as_got = alice.get(f"/api/threads/{thread['id']}/").json()
    resp = alice.put(f"/api/threads/{thread['id']}/", {**as_got, "title": "Rent for May"}, format="json")
    assert resp.status_code == 200 and resp.json()["id"] == thread["id"]
    assert Thread.objects.get().title == "Rent for May"


def test_delete_thread_refused_while_busy_then_allowed(api, demo, quiet_runs, django_capture_on_commit_callbacks):
    alice = api("alice")
    thread_id = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    thread = Thread.objects.get(pk=thread_id)
    with django_capture_on_commit_callbacks(execute=True):
        run = start_run(thread, demo["alice"], "hello")
    resp = alice.delete(f"/api/threads/{thread_id}/")
    assert resp.status_code == 409 and resp.json()["code"] == "thread_busy"

    Run.objects.filter(pk=run.pk).update(status=Run.Status.INTERRUPTED)
    req = transfer_request(demo["alice"])
    ApprovalRequest.objects.filter(pk=req.pk).update(thread_ref=thread_id)
    assert alice.delete(f"/api/threads/{thread_id}/").status_code == 409  # a request still waits

    ApprovalRequest.objects.filter(pk=req.pk).update(status=ApprovalRequest.Status.CANCELLED)
    assert alice.delete(f"/api/threads/{thread_id}/").status_code == 204
    assert not Thread.objects.filter(pk=thread_id).exists()
    assert not Message.objects.filter(thread_id=thread_id).exists()


def test_retry_starts_a_new_run_without_a_new_message(api, demo, quiet_runs, django_capture_on_commit_callbacks):
    alice = api("alice")
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    with django_capture_on_commit_callbacks(execute=True):
        failed = start_run(thread, demo["alice"], "hello")
    assert alice.post(f"/api/runs/{failed.pk}/retry/").json()["code"] == "not_retryable"  # still queued
    Run.objects.filter(pk=failed.pk).update(status=Run.Status.FAILED, error="model down", error_code="model_unavailable")

    assert api("bob").post(f"/api/runs/{failed.pk}/retry/").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        resp = alice.post(f"/api/runs/{failed.pk}/retry/")
    assert resp.status_code == 202
    retried = resp.json()
    assert retried["status"] == "queued" and retried["id"] != failed.pk
    assert quiet_runs == [failed.pk, retried["id"]]
    assert list(thread.messages.values_list("role", "content")) == [("user", "hello")]  # no duplicate

    # only the latest run of the thread can be retried
    Run.objects.filter(pk=retried["id"]).update(status=Run.Status.FAILED)
    resp = alice.post(f"/api/runs/{failed.pk}/retry/")
    assert resp.status_code == 409 and resp.json()["code"] == "not_retryable"


# --- shared state over REST ------------------------------------------------------------------


def test_state_read_patch_replace_and_clear_over_rest(api, demo, django_capture_on_commit_callbacks):
    from agents.runtime import events
    from state import services as state_services

    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "recipe"}, format="json").json()["id"]
    url = f"/api/threads/{thread}/state/"
    assert alice.get(url).json() == {"version": 0, "state": {}, "provisional": []}

    recipe = {**CARBONARA, "title": "Soup"}
    with django_capture_on_commit_callbacks(execute=True):
        resp = alice.put(url, {"base_version": 0, "state": {"recipe": recipe}}, format="json")
    assert resp.status_code == 200, resp.json()
    assert resp.json() == {"version": 1, "state": {"recipe": recipe}, "provisional": []}

    with django_capture_on_commit_callbacks(execute=True):
        resp = alice.patch(url, {"base_version": 1, "patch": [
            {"op": "replace", "path": "/recipe/title", "value": "Carrot soup"}]}, format="json")
    assert resp.status_code == 200 and resp.json()["version"] == 2
    assert state_services.snapshot(f"thread:{thread}") == ({"recipe": {**recipe, "title": "Carrot soup"}}, 2)
    # every open chat hears it: STATE_DELTA on the thread's stream, then the version
    deltas = [json.loads(e[b"e"]) for _id, e in events.redis_client().xrange(events.stream_key(thread))]
    assert [d["type"] for d in deltas][-2:] == ["STATE_DELTA", "CUSTOM"]
    assert deltas[-2]["delta"] == [{"op": "replace", "path": "/recipe/title", "value": "Carrot soup"}]

    with django_capture_on_commit_callbacks(execute=True):
        resp = alice.put(url, {"base_version": 2, "state": {}}, format="json")  # {} clears it here
    assert resp.status_code == 200 and resp.json() == {"version": 3, "state": {}, "provisional": []}


def test_state_changes_that_cannot_be_made_change_nothing(api, demo):
    from state import services as state_services

    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "recipe"}, format="json").json()["id"]
    url = f"/api/threads/{thread}/state/"
    good = {"recipe": {**CARBONARA, "title": "Soup"}}
    assert alice.put(url, {"base_version": 0, "state": good}, format="json").status_code == 200

    stale = alice.patch(url, {"base_version": 0, "patch": [{"op": "remove", "path": "/recipe"}]}, format="json")
    assert stale.status_code == 409
    assert stale.json()["code"] == "state_conflict" and stale.json()["version"] == 1
    assert stale.json()["snapshot"] == good  # what to retry from

    schema = alice.patch(url, {"base_version": 1, "patch": [
        {"op": "replace", "path": "/recipe/title", "value": 42}]}, format="json")
    assert schema.status_code == 422 and schema.json()["code"] == "state_invalid"
    assert schema.json()["errors"][0]["path"] == "/recipe/title"

    bad = alice.patch(url, {"base_version": 1, "patch": {"op": "add"}}, format="json")
    assert bad.status_code == 422 and bad.json()["code"] == "state_invalid"
    missing = alice.patch(url, {"base_version": 1}, format="json")
    assert missing.status_code == 400 and "patch" in missing.json()
    unversioned = alice.put(url, {"state": {}}, format="json")
    assert unversioned.status_code == 400 and "base_version" in unversioned.json()

    state_services.predict(f"thread:{thread}", "call-1", {"recipe": {**CARBONARA, "title": "Predicted"}})
    waiting = alice.patch(url, {"base_version": 1, "patch": [
        {"op": "replace", "path": "/recipe/title", "value": "Mine"}]}, format="json")
    assert waiting.status_code == 409 and waiting.json()["code"] == "state_provisional"
    assert alice.get(url).json()["provisional"] == [{"key": "recipe", "tool_call_id": "call-1"}]

    assert state_services.snapshot(f"thread:{thread}") == (good, 1)
    bob = api("bob")
    assert bob.get(url).status_code == 404
    assert bob.put(url, {"base_version": 1, "state": {}}, format="json").status_code == 404
    assert state_services.snapshot(f"thread:{thread}") == (good, 1)
