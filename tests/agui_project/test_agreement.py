"""The settings every process must share (agui_project/agreement.py): each process writes their
digests to Redis, and /healthz names the ones another process holds otherwise. A web process or a
worker with another DJANGO_SECRET_KEY (or queue, or windows) worked on its own and every /healthz said
200: users were signed out on one request in N, mail links were refused, runs sat queued."""

import json
import logging
import time

import pytest

from agents.runtime.events import redis_client
from agui_project import agreement
from agui_project.celery import compare_settings_as_a_worker, compare_settings_as_the_beat

pytestmark = pytest.mark.django_db


class Sender:
    hostname = "w1@test"


def another_process(settings, kind, name, **changed):
    """Write the digests a process of `kind` with these settings changed would write."""
    saved = {k: getattr(settings, k) for k in changed}
    for k, v in changed.items():
        setattr(settings, k, v)
    try:
        return agreement.publish(kind, name)
    finally:
        for k, v in saved.items():
            setattr(settings, k, v)


def test_alone_or_with_processes_of_the_same_settings_they_are_the_same(client, settings):
    assert client.get("/healthz").json()["settings"] == "same"
    another_process(settings, "worker", "w1@test")
    another_process(settings, "beat", "beat@test")
    resp = client.get("/healthz?require=settings")
    assert resp.status_code == 200 and resp.json()["settings"] == "same"


def test_a_worker_with_another_secret_key_is_named_and_fails_the_settings_probe(client, settings, caplog):
    another_process(settings, "worker", "w1@test", SECRET_KEY="another-" + "k" * 50)
    another_process(settings, "web", "10.0.0.12:7", CELERY_TASK_DEFAULT_QUEUE="other", AGUI_UNDO_SECONDS=30)
    with caplog.at_level(logging.WARNING, logger="agui_project.agreement"):
        resp = client.get("/healthz")
        again = client.get("/healthz?require=settings")
    assert resp.status_code == 200  # not the load balancer's verdict: the process that is right sees it too
    # by kind: anyone may ask /healthz, and the hosts behind the proxy are not theirs to learn
    assert resp.json()["settings"] == ("differ: AGUI_UNDO_SECONDS (web); CELERY_TASK_DEFAULT_QUEUE (web); "
                                       "DJANGO_SECRET_KEY (worker)")
    assert "10.0.0.12" not in resp.content.decode() and "w1@test" not in resp.content.decode()
    assert again.status_code == 503 and again.json()["settings"] == resp.json()["settings"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "agui_project.agreement"]
    # the operators' log names them: once, not per probe
    assert len(warnings) == 1 and "DJANGO_SECRET_KEY (worker w1@test)" in warnings[0], warnings
    assert "CELERY_TASK_DEFAULT_QUEUE (web 10.0.0.12:7)" in warnings[0]


def test_only_digests_are_written_and_they_lapse(client, settings):
    settings.OPENAI_API_KEY = "sk-secret-value"
    client.get("/healthz")
    (key,) = list(redis_client().scan_iter(agreement.KEY_PREFIX + "web *"))
    raw = redis_client().get(key)
    assert b"sk-secret-value" not in raw and settings.SECRET_KEY.encode() not in raw
    assert set(json.loads(raw)) == set(agreement.shared()) and "AGUI_TOKEN_TTL_SECONDS" in raw.decode()
    assert 0 < redis_client().ttl(key) <= agreement.TTL  # a stopped process drops out


@pytest.mark.parametrize("start,kind,name", [(lambda: compare_settings_as_a_worker(sender=Sender()), "worker", "w1@test"),
                                             (compare_settings_as_the_beat, "beat", None)])
def test_workers_and_the_beat_check_theirs_from_their_start(monkeypatch, start, kind, name):
    started = []
    monkeypatch.setattr(agreement, "keep_checking", lambda *args: started.append(args))
    start()
    assert started == [(kind, name) if name else (kind,)]


def test_the_thread_writes_at_once_and_again_until_stopped(settings):
    stop = agreement.keep_checking("worker", "w2@test")
    try:
        deadline = time.monotonic() + 10
        while not redis_client().exists(agreement.KEY_PREFIX + "worker w2@test"):  # its first round: a condition
            assert time.monotonic() < deadline, "the thread wrote nothing"
            time.sleep(0.01)
    finally:
        stop.set()


def test_every_agui_setting_is_compared_but_the_per_process_ones(client, settings):
    """README's table named some; a web process whose tokens live another length (401 on one request
    in N), whose limits differ, or a worker that mails in another language is as much a fault."""
    another_process(settings, "web", "10.0.0.13:9", AGUI_TOKEN_TTL_SECONDS=60, AGUI_DB_POOL_SIZE=3,
                    AGUI_STREAM_READER_CONNECTIONS=5, LANGUAGE_CODE="fr")
    assert client.get("/healthz").json()["settings"] == (
        "differ: AGUI_TOKEN_TTL_SECONDS (web); DJANGO_LANGUAGE_CODE (web)")


def test_the_probe_counts_the_processes_of_each_kind_it_heard_from(client, settings):
    """One worker down left /healthz's `workers` at 1 (a ping stops at the first reply), and a second
    beat showed nowhere."""
    for name in ("w1@a", "w2@b"):
        another_process(settings, "worker", name)
    for name in ("a:1", "b:2"):
        another_process(settings, "beat", name)
    assert client.get("/healthz").json()["processes"] == {"beat": 2, "web": 1, "worker": 2}
    redis_client().delete(agreement.KEY_PREFIX + "worker w2@b")  # stopped: its key lapsed
    assert client.get("/healthz").json()["processes"] == {"beat": 2, "web": 1, "worker": 1}


@pytest.mark.parametrize(("argv", "daphne"), [
    (["/srv/app/.venv/bin/daphne", "-b", "127.0.0.1", "agui_project.asgi:application"], True),
    (["/srv/app/.venv/lib/python3.11/site-packages/daphne/__main__.py", "-p", "8000"], True),
    (["/srv/app/.venv/bin/pytest", "tests"], False),
    (["manage.py", "runserver"], False),
    (["/srv/app/.venv/lib/python3.11/site-packages/celery/__main__.py", "worker"], False),
    ([], False),
])
def test_only_a_daphne_process_checks_from_its_start(argv, daphne):
    assert agreement.served_by_daphne(argv) is daphne


def test_a_clean_exit_takes_the_digests_away(monkeypatch, settings):
    exits = []
    monkeypatch.setattr(agreement.atexit, "register", lambda *args: exits.append(args))
    stop = agreement.keep_checking("beat", "b1@test")
    key = agreement.KEY_PREFIX + "beat b1@test"
    deadline = time.monotonic() + 10
    while not redis_client().exists(key):  # its first round: a condition
        assert time.monotonic() < deadline, "the thread wrote nothing"
        time.sleep(0.01)
    ((leave, *args),) = exits
    leave(*args)
    assert stop.is_set() and not redis_client().exists(key)
