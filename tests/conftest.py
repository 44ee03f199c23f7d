"""Shared fixtures: demo data, API clients, the fake OpenAI-compatible model, a live Celery worker.

Redis is real (REDIS_URL, or the embedded one `make test` starts); threads get fresh ids, so
their event streams never collide between tests.
"""

import json
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command

from agui_project.celery import app as celery_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import messages  # noqa: E402  (scripts/messages.py: the translations' .mo files)

# A queue of this session's own: tasks enqueued by tests without a worker never reach another run.
TEST_QUEUE = f"agui-test-{uuid.uuid4().hex[:8]}"
celery_app.conf.task_default_queue = TEST_QUEUE


def pytest_sessionstart(session):
    messages.compile_messages()  # a plain `pytest` run gets the translations `make test` would compile


@pytest.fixture(scope="session", autouse=True)
def _drop_test_queue():
    yield
    from agents.runtime.events import redis_client

    redis_client().delete(TEST_QUEUE)


@pytest.fixture(autouse=True)
def _no_sign_in_history():
    """Failed sign-ins are counted in Redis (agui_project/login_throttle.py): each test starts with none."""
    import redis

    from agents.runtime.events import redis_client

    try:
        keys = list(redis_client().scan_iter("agui:login-failures*", count=1000))
        if keys:
            redis_client().delete(*keys)
    except redis.RedisError:
        pass  # a test without Redis signs nobody in


@pytest.fixture(scope="session", autouse=True)
def _no_settings_threads():
    """A live worker started in this process (celery_worker_live) would start the thread that writes its
    settings every 20 s (agui_project/agreement.py), reading them while a test has changed them."""
    from celery import signals

    from agui_project import celery

    signals.worker_ready.disconnect(celery.compare_settings_as_a_worker)
    signals.beat_init.disconnect(celery.compare_settings_as_the_beat)


@pytest.fixture(autouse=True)
def _socket_refusals_said_afresh(monkeypatch):
    """A refused socket's reason is logged once per process (agui_project/sockets.py): each test starts
    with none said, whatever an earlier test was refused for."""
    from agui_project import sockets

    monkeypatch.setattr(sockets, "_told", set())


@pytest.fixture(autouse=True)
def _settings_compared_among_its_own(request, monkeypatch):
    """Each process's shared settings are written to Redis for a minute (agui_project/agreement.py): a
    test compares only with what it wrote itself, not with a live stack's processes (their own
    settings, in the same Redis) nor with an earlier test's."""
    from agui_project import agreement

    prefix = f"agui:settings:test:{id(request)}:"
    monkeypatch.setattr(agreement, "KEY_PREFIX", prefix)
    yield
    import redis

    from agents.runtime.events import redis_client

    try:
        keys = list(redis_client().scan_iter(prefix + "*", count=1000))
        if keys:
            redis_client().delete(*keys)
    except redis.RedisError:
        pass


@pytest.fixture(autouse=True)
def _workers_asked_anew(monkeypatch):
    """/healthz keeps the workers' answer to its last ping for a second (agui_project/health._Kept):
    each test's probes ask their own workers (or the test's stand-in for the ping). It also counts
    from its first look how long the sweeps' mark has been missing (health._Unswept): each test's
    Redis starts without one, so each test's count starts anew."""
    from agui_project import health

    monkeypatch.setattr(health, "kept", health._Kept())
    monkeypatch.setattr(health, "unswept", health._Unswept())


@pytest.fixture(autouse=True)
def _redis_data_long_known():
    """Recovery trusts a lapsed lease only once Redis's data is older than a lease (a restart empties
    live holders' keys too: agents/runtime/execution._lapsed); the test Redis counts as long up."""
    import redis

    from agents.runtime.events import redis_client
    from agents.runtime.execution import LEASES_SINCE_KEY, LEASES_SWEPT_KEY

    try:
        redis_client().set(LEASES_SINCE_KEY, 0)
        redis_client().delete(LEASES_SWEPT_KEY)  # no sweep yet: no silence since the last one
    except redis.RedisError:
        pass  # a test without Redis recovers nothing


@pytest.fixture(autouse=True)
def _decisions_woken_here(request, monkeypatch):
    """A decision's wake-up is a worker's task (agents.tasks.continue_decided), which runs the
    continuation itself. A test without a worker has it done at once on the deciding thread, and
    the continuation handed to `run_agent.delay`, which such tests patch or leave in their queue;
    with `celery_worker_live` the worker does it all."""
    if "celery_worker_live" in request.fixturenames:
        return

    def wake_here(request_id):
        from agents import services
        from agents.dispatch import hand_over

        for run in services.continue_decided(request_id):
            hand_over(run.pk, run.stream_id)  # its task, and where its events begin (the claim's to store)

    monkeypatch.setattr("agents.tasks.continue_decided.delay", wake_here)


@pytest.fixture(autouse=True)
def _mails_sent_here(request, monkeypatch):
    """A request's mails go out from a task of their own (approvals.services.mail_later). A test
    without a worker has that task's body run at once, after the commit, as the worker would (from
    the request's id); with `celery_worker_live`, or marked `mail_by_task`, the task is sent."""
    if "celery_worker_live" in request.fixturenames or request.node.get_closest_marker("mail_by_task"):
        return
    from django.db import transaction

    from approvals import mail

    monkeypatch.setattr("approvals.services.mail_later", lambda kind, req, *args: transaction.on_commit(
        lambda: mail.deliver(kind, req.pk, *args)))


@pytest.fixture(autouse=True)
def _language_of_its_own():
    """Each test starts in the default language: a request answered in a person's saved language
    leaves it active on the test's thread (a server's next request activates its own), and the
    next test read French where it expected English."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _a_channel_layer_of_its_own():
    """channels_redis's layer keeps the receive lock made in its first receive's loop while any
    receive is in flight (its receive_count): a test whose loop ended with a socket still receiving
    left it so, and a later test's sockets failed "Lock ... is bound to a different event loop" (a
    server has one loop for its life; the suite makes one per test)."""
    from channels.layers import channel_layers

    channel_layers.backends = {}


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _review_wait_off(settings):
    # an AG-UI response ends at the paused run's RUN_FINISHED even when a group reviews the call;
    # the tests of following a review (tests/agents/test_agui_review.py) set their own wait
    settings.AGUI_SSE_REVIEW_WAIT_SECONDS = 0


@pytest.fixture(autouse=True)
def _undo_window_off(settings):
    # the inbox pages' decisions are sent at once; the tests of the undo window set their own
    settings.AGUI_UNDO_SECONDS = 0


@pytest.fixture
def demo(db):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    from django.contrib.auth.models import User

    return {u.username: u for u in User.objects.all()}


@pytest.fixture
def api(demo):
    """api("alice") -> a DRF client authenticated with alice's real token."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def make(username, keyword="Token"):
        token, _ = Token.objects.get_or_create(user=demo[username])
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"{keyword} {token.key}")
        return client

    return make


@pytest.fixture
def fake_llm(settings):
    from tests.fake_llm import FakeLLM

    server = FakeLLM()
    server.start()
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_BASE_URL = server.base_url
    settings.AGUI_MODEL = "fake-model"
    yield server
    server.stop()
    # a test that expects a failed run must not pass because the product sent OpenAI an invalid
    # conversation: every refusal the fake answered fails the test that caused it
    assert not server.rejected, f"the product sent a conversation OpenAI refuses: {server.rejected[0][1]}"


@pytest.fixture
def login(client, demo):
    """login("finn") -> the test client, signed in as that demo user."""
    def as_user(username):
        client.force_login(demo[username])
        return client

    return as_user


@pytest.fixture
def celery_worker_live(transactional_db):
    """A real Celery worker (threads) consuming real Redis, in this process (NOTES.md traps 3, 4)."""
    from celery.contrib.testing.worker import start_worker

    with start_worker(celery_app, pool="threads", concurrency=2, perform_ping_check=False,
                      loglevel="WARNING", shutdown_timeout=10) as worker:
        yield worker


def wait_for_event(thread_id, predicate, timeout=20.0, after="0-0"):
    """Block on the thread's Redis Stream until an event matches; returns (event, entry id)."""
    from agents.runtime.events import redis_client, stream_key

    deadline = time.monotonic() + timeout
    client = redis_client()
    while time.monotonic() < deadline:
        result = client.xread({stream_key(thread_id): after}, block=1000, count=200)
        for _key, entries in result or []:
            for entry_id, fields in entries:
                after = entry_id
                event = json.loads(fields[b"e"])
                if predicate(event):
                    return event, entry_id
    raise AssertionError(f"no matching event on thread {thread_id} within {timeout}s")


def stream_events(thread_id):
    from agents.runtime.events import redis_client, stream_key

    return [json.loads(f[b"e"]) for _id, f in redis_client().xrange(stream_key(thread_id))]
