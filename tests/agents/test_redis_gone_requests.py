"""Requests made while Redis is down from the start: each says so within seconds, and an AG-UI POST
writes nothing. Through the product's client (its retries ride out ~12 s per call) an AG-UI POST
took 55 s to its RUN_ERROR and left a queued run behind, a sign-in 38 s, a new chat, a state change and
a Stop of a queued run 12.5 s each (their notices after the commit)."""

import socket
import time
import uuid

import pytest

from agents.models import Message, Run, Thread, ThreadIdClaim
from tests.agents.test_agui import post, refusal, run_input, user_msg

pytestmark = pytest.mark.django_db(transaction=True)
QUICK = 3.0  # seconds: a refused connection is answered at once; two tries of a silent one take 2 s


@pytest.fixture
def redis_gone(settings, monkeypatch):
    """Every Redis client of the process pointed at a port that refuses connections."""
    from agui_project import redis_client as clients

    original, closed = settings.REDIS_URL, socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    settings.REDIS_URL = f"redis://127.0.0.1:{closed.getsockname()[1]}/0"
    settings.AGUI_STREAM_GRACE_SECONDS = 2  # so that the old behaviour fails in seconds, not a minute
    monkeypatch.setattr(clients, "_client", None)  # the quick clients follow REDIS_URL
    yield
    settings.REDIS_URL = original  # now: conftest's own teardowns use Redis before `settings` is undone
    monkeypatch.setattr(clients, "_client", None)
    closed.close()


def test_an_agui_post_is_refused_at_once_and_nothing_is_stored(client, demo, redis_gone, caplog):
    from rest_framework.authtoken.models import Token

    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    began = time.monotonic()
    error = refusal(post(client, "banking", run_input(thread_id, [user_msg("hello")], run_id=run_id),
                         HTTP_AUTHORIZATION=f"Bearer {token}"))
    took = time.monotonic() - began
    assert error["code"] == "service_unavailable", error
    assert error["message"] == "The service is temporarily unavailable, so nothing was stored. Try again in a moment."
    assert took < QUICK, took
    # nothing half-written: no thread, no message, no queued run to surprise the user later
    assert not Thread.objects.filter(pk=thread_id).exists()
    assert not ThreadIdClaim.objects.filter(pk=thread_id).exists()  # the id is free for the retry
    assert not Run.objects.filter(pk=run_id).exists() and not Message.objects.exists()
    assert "Redis unreachable" in caplog.text  # the operator's side of the story


def test_a_sign_in_works_unthrottled_at_once(client, demo, redis_gone, caplog):
    began = time.monotonic()
    response = client.post("/accounts/login/", {"username": "alice", "password": "agui-demo"})
    took = time.monotonic() - began
    assert response.status_code == 302
    assert took < QUICK, took
    assert "sign-in throttle skipped: Redis unreachable" in caplog.text


def test_a_new_chat_is_made_at_once(api, redis_gone):
    began = time.monotonic()
    response = api("alice").post("/api/threads/", {"agent": "banking"}, format="json")
    took = time.monotonic() - began
    assert response.status_code == 201, response.content
    assert took < QUICK, took
    assert Thread.objects.filter(pk=response.json()["id"]).exists()


def test_a_state_change_is_answered_at_once(api, demo, redis_gone):
    from agents import services

    thread = services.create_thread(demo["alice"], "planner")
    began = time.monotonic()
    response = api("alice").put(f"/api/threads/{thread.pk}/state/", {"base_version": 0, "state": {"preferences": {"a": 1}}},
                                format="json")
    took = time.monotonic() - began
    assert response.status_code == 200, response.content  # the change stands; its notice is what is lost
    assert took < QUICK, took


def test_a_stop_of_a_queued_run_is_answered_at_once_and_its_end_kept(api, demo, redis_gone):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.QUEUED)
    began = time.monotonic()
    response = api("alice").post(f"/api/runs/{run.pk}/cancel/")
    took = time.monotonic() - began
    assert response.status_code == 202, response.content
    assert took < QUICK, took
    assert '"RUN_FINISHED"' in Run.objects.get(pk=run.pk).undelivered_end  # for the beat, once Redis answers


def test_a_stop_of_a_running_run_is_answered_at_once_and_kept(api, demo, redis_gone):
    """The Stop's Redis flag was set through the product client inside the run's row lock: ~12 s of
    retries, every SQLite writer of the site waiting behind it, then a 503 (later a 503 at once)."""
    from django.utils import timezone

    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING, started_at=timezone.now())
    began = time.monotonic()
    response = api("alice").post(f"/api/runs/{run.pk}/cancel/")
    took = time.monotonic() - began
    assert response.status_code == 202, response.content
    assert took < QUICK, took
    assert Run.objects.get(pk=run.pk).stop_unsent_at is not None  # for the beat, once Redis answers


def test_a_ping_answered_within_a_second_stands_for_the_next_asker(monkeypatch):
    """Every AG-UI POST asks whether Redis answers: one PING a second per process, not one a POST."""
    from agui_project import redis_client as clients

    pings, clock = [], [100.0]

    class Client:
        def ping(self):
            pings.append(clock[0])

    monkeypatch.setattr(clients, "brief_client", Client)
    monkeypatch.setattr(clients, "_answered", ("", float("-inf")))
    monkeypatch.setattr(clients, "_clock", lambda: clock[0])
    assert clients.unreachable() is None and clients.unreachable() is None and pings == [100.0]
    clock[0] += clients.ANSWERED_FOR - 0.01
    assert clients.unreachable() is None and pings == [100.0]
    clock[0] += 0.02
    assert clients.unreachable() is None and len(pings) == 2


def test_a_failed_ping_is_asked_again_by_the_next_asker(monkeypatch):
    import redis

    from agui_project import redis_client as clients

    answers = [redis.ConnectionError("refused"), None]

    class Client:
        def ping(self):
            if (answer := answers.pop(0)) is not None:
                raise answer

    monkeypatch.setattr(clients, "brief_client", Client)
    monkeypatch.setattr(clients, "_answered", ("", float("-inf")))
    assert isinstance(clients.unreachable(), redis.ConnectionError)
    assert clients.unreachable() is None and not answers


def test_the_quick_clients_follow_a_changed_redis_url(settings):
    """Kept for the address they were made for: a test that gave the process a Redis of its own left
    them on that one once it was gone, and every later AG-UI POST of the session was refused."""
    from agui_project import redis_client as clients

    before = clients.brief_client(), clients.probe_client()
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    after = clients.brief_client(), clients.probe_client()
    assert all(a is not b and b.connection_pool.connection_kwargs["port"] == 1 for a, b in zip(before, after, strict=True))
    assert (clients.brief_client(), clients.probe_client()) == after  # kept while the address stands
