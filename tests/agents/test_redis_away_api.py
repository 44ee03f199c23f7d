"""A Redis outage met by the REST API: a change that committed before Redis was needed stands and is
answered as made (its live notice is what is lost, or kept for the beat); a Stop is kept for the beat
too, which passes it on once Redis answers."""

import pytest
import redis
from django.utils import timezone

from agents import services
from agents.models import Run, Thread
from agents.runtime import events, execution

pytestmark = pytest.mark.django_db(transaction=True)


class Down:
    """A Redis client whose every command meets Redis gone."""

    def __getattr__(self, name):
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6391. Connection refused.")


@pytest.fixture
def redis_down(monkeypatch):
    monkeypatch.setattr(events, "redis_client", lambda: Down())
    monkeypatch.setattr(events, "brief_client", lambda: Down())  # the notices after a commit (events.notice)


def test_stop_of_a_running_run_while_redis_is_down_stands_and_the_beat_passes_it_on(demo, api, redis_down,
                                                                                   monkeypatch):
    """It was a 503 to retry: the person had to press Stop again until Redis was back."""
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now())
    response = api("alice").post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "running"  # it stops at its next check, once told
    assert Run.objects.get(pk=run.pk).stop_unsent_at is not None

    monkeypatch.undo()  # Redis answers again
    assert not services.cancel_requested(run.pk)
    assert services.pass_on_stops() == [run.pk]  # the beat
    assert services.cancel_requested(run.pk)
    assert Run.objects.get(pk=run.pk).stop_unsent_at is None
    assert services.pass_on_stops() == []  # once


def test_a_stop_the_beat_passes_on_to_a_run_that_paused_meanwhile_withdraws_its_request(demo, api, redis_down,
                                                                                       monkeypatch):
    """The run paused before it could hear of the Stop: it is stopped as Stop stops a paused run."""
    from approvals.models import ApprovalRequest
    from tests.helpers import paused_transfer

    run, req = paused_transfer(demo["alice"], "call-stop-unsent")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert api("alice").post(f"/api/runs/{run.pk}/cancel/").status_code == 202
    Run.objects.filter(pk=run.pk).update(status=Run.Status.INTERRUPTED)  # it paused, not having heard
    monkeypatch.undo()
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)
    assert services.pass_on_stops() == [run.pk]
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.CANCELLED
    assert Run.objects.get(pk=run.pk).stop_unsent_at is None


def test_a_kept_stop_of_an_account_switched_off_withdraws_in_the_engines_name(demo, redis_down, monkeypatch):
    """Switching the account off stops its running run (account_off); with Redis down that Stop waits
    for the beat, and the run paused meanwhile. Its request was withdrawn in the owner's name, as
    "the user stopped the run": the account-off sweep, had it come first, says why and names nobody."""
    from django.contrib.auth.models import User

    from approvals.models import REQUESTER_OFF, ApprovalRequest
    from tests.helpers import paused_transfer

    run, req = paused_transfer(demo["alice"], "call-stop-off")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert services.cancel_run(run, None, reason=REQUESTER_OFF)  # agents/account_off.withdraw
    assert Run.objects.get(pk=run.pk).stop_unsent_at is not None
    Run.objects.filter(pk=run.pk).update(status=Run.Status.INTERRUPTED)  # it paused, not having heard
    User.objects.filter(pk=demo["alice"].pk).update(is_active=False)  # no save(): no receiver ran
    monkeypatch.undo()
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)
    assert services.pass_on_stops() == [run.pk]
    req = ApprovalRequest.objects.get(pk=req.pk)
    assert (req.status, req.feedback, req.decided_by_id) == (ApprovalRequest.Status.CANCELLED, REQUESTER_OFF, None)


def test_a_stop_kept_for_a_run_that_ended_meanwhile_is_dropped(demo, api, redis_down, monkeypatch):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now())
    assert api("alice").post(f"/api/runs/{run.pk}/cancel/").status_code == 202
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    monkeypatch.undo()
    assert services.pass_on_stops() == []
    assert not services.cancel_requested(run.pk) and Run.objects.get(pk=run.pk).stop_unsent_at is None


def test_stop_of_a_queued_run_while_redis_is_down_stands_and_its_end_waits_for_the_beat(demo, api, redis_down,
                                                                                        monkeypatch):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.QUEUED)
    response = api("alice").post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 202, response.content  # was a 500, though the run was cancelled
    stopped = Run.objects.get(pk=run.pk)
    assert stopped.status == "cancelled" and '"RUN_FINISHED"' in stopped.undelivered_end

    published = []
    monkeypatch.setattr(events, "append_encoded", lambda thread_id, payload: published.append((thread_id, payload)))
    assert execution.publish_undelivered_ends() == [run.pk]  # the beat, once Redis answers
    assert published == [(thread.pk, stopped.undelivered_end)]


def test_a_state_change_while_redis_is_down_stands_and_is_answered(demo, api, redis_down):
    thread = services.create_thread(demo["alice"], "banking")
    response = api("alice").put(f"/api/threads/{thread.pk}/state/", {"base_version": 0, "state": {"note": "hi"}},
                                format="json")
    assert response.status_code == 200, response.content  # was a 500 after the commit
    assert response.json()["state"] == {"note": "hi"}


def test_an_answer_to_the_agents_question_while_redis_is_down_stands_and_is_answered(demo, monkeypatch):
    from agents.models import InputRequest
    from tests.agents.test_workflows import REFUND_PROMPT
    from tests.helpers import run_prompt

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = services.create_thread(demo["alice"], "support")
    assert run_prompt(thread, demo["alice"], REFUND_PROMPT).status == "interrupted"
    monkeypatch.setattr(events, "redis_client", lambda: Down())
    monkeypatch.setattr(events, "brief_client", lambda: Down())
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(demo["alice"])
    response = client.post(f"/api/threads/{thread.pk}/answer/", {"cancel": True}, format="json")
    assert response.status_code == 202, response.content  # was a 500 after the answer committed
    assert InputRequest.objects.get(thread=thread).status == "cancelled"
