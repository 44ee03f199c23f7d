"""GET /healthz (agui_project/health.py): 200 while the database and Redis answer, whatever the
workers do (they are reported in the body); `?require=worker` waits for a worker, asking again when
a ping goes unanswered, instead of failing a healthy start after one 0.5 s ping."""

import pytest
import redis

from agui_project import health
from tests.helpers import accept_each

pytestmark = pytest.mark.django_db
PONG = [{"celery@test": {"ok": "pong"}}]


class Pings:
    """Stands in for celery's control.ping: silent for the first `silent` calls, then one worker."""

    def __init__(self, silent):
        self.silent, self.calls = silent, []

    def __call__(self, timeout, limit=None):
        self.calls.append((timeout, limit))
        return PONG if len(self.calls) > self.silent else []


@pytest.fixture
def pings(monkeypatch):
    def install(silent):
        fake = Pings(silent)
        monkeypatch.setattr(health.celery_app.control, "ping", fake)
        return fake

    return install


def test_a_worker_that_misses_its_first_pings_is_still_found(client, pings):
    fake = pings(silent=2)
    resp = client.get("/healthz?require=worker")
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"db": "ok", "redis": "ok", "workers": 1, "worker": "ok", "sweeps": "none yet",
                           "settings": "same", "processes": {"web": 1}}
    assert len(fake.calls) == 3
    assert all(limit == 1 for _, limit in fake.calls)  # each ping ends at the first reply
    assert sum(t for t, _ in fake.calls) >= 2.0  # more patience than the old single 0.5 s ping


def test_the_strict_probe_fails_when_no_worker_ever_answers(client, pings):
    fake = pings(silent=99)
    resp = client.get("/healthz?require=worker")
    assert resp.status_code == 503
    assert resp.json()["workers"] == 0 and resp.json()["worker"] == "no worker answered"
    assert len(fake.calls) == len(health.WORKER_PING_TIMEOUTS)


def test_the_load_balancer_probe_is_healthy_without_a_worker(client, pings):
    """Workers are shared: one being slow or restarting must not take the web processes out."""
    fake = pings(silent=99)
    resp = client.get("/healthz")
    assert resp.status_code == 200
    assert resp.json() == {"db": "ok", "redis": "ok", "workers": 0, "worker": "no worker answered", "sweeps": "none yet",
                           "settings": "same", "processes": {"web": 1}}
    assert fake.calls == [(health.LB_PING_TIMEOUT, 1)]  # one short ping: the probe stays quick


def test_a_flood_of_probes_pings_the_workers_once_a_second(client, pings, monkeypatch):
    """/healthz needs no sign-in, and each probe broadcast a ping every worker answers: a flood of
    probes kept every worker answering pings. A ping's answer now serves the probes of the next second."""
    fake = pings(silent=0)
    now = [1000.0]
    monkeypatch.setattr(health, "kept", health._Kept(clock=lambda: now[0]))
    for _ in range(50):
        assert client.get("/healthz").json()["workers"] == 1
    assert fake.calls == [(health.LB_PING_TIMEOUT, 1)]
    now[0] += health.PING_KEPT_SECONDS
    client.get("/healthz")
    assert len(fake.calls) == 2  # a second later the workers are asked again
    client.get("/healthz?require=worker")  # the strict probe's own pings, kept apart
    assert len(fake.calls) == 3


def test_redis_down_is_unhealthy(client, pings, monkeypatch, caplog):
    fake = pings(silent=0)

    class Down:
        def ping(self):
            raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr(health, "probe_client", lambda: Down())
    resp = client.get("/healthz")
    assert resp.status_code == 503
    # a sentence, not the exception: the probe needs no sign-in (it said "error: ConnectionError")
    assert resp.json()["redis"] == "error: Redis did not answer"
    assert "ConnectionError" not in resp.content.decode()
    assert "; redis: network:ConnectionError" in caplog.text  # the operator's, in the 503's line (logging's own form)
    assert fake.calls == []  # the workers are reached through Redis: not asked


def test_a_ping_that_raises_counts_as_no_answer(client, monkeypatch):
    def broken(timeout, limit=None):
        raise OSError("broker unreachable")

    monkeypatch.setattr(health.celery_app.control, "ping", broken)
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz?require=worker").status_code == 503


def test_a_503_while_the_worker_starts_is_not_logged_as_a_server_error(client, pings, caplog, monkeypatch):
    """`make run` polls ?require=worker until a worker answers: each 503 on the way is expected,
    so django.request must not print "ERROR Service Unavailable: /healthz" on the console."""
    pings(silent=99)
    caplog.set_level("DEBUG")
    assert client.get("/healthz?require=worker").status_code == 503
    assert not [r for r in caplog.records if r.levelno >= 40], [r.getMessage() for r in caplog.records]
    assert [r.levelname for r in caplog.records if r.name == "agui_project.health"] == ["DEBUG"]

    class Down:  # a real outage is worth a warning (still not django.request's ERROR)
        def ping(self):
            raise redis.ConnectionError("Connection refused")

    caplog.clear()
    monkeypatch.setattr(health, "probe_client", lambda: Down())
    assert client.get("/healthz").status_code == 503
    assert [(r.name, r.levelname) for r in caplog.records if r.levelno >= 30] == [("agui_project.health", "WARNING")]


class HangingUp:
    """A listener that accepts every connection and closes it at once (a proxy in front of a Redis
    that is down): counts the connections it was asked for."""

    def __init__(self):
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self.listener.getsockname()[1]}/0"
        self.accepted = 0
        threading.Thread(target=accept_each, args=(self.listener, self._hang_up), daemon=True).start()

    def _hang_up(self, conn):
        self.accepted += 1
        conn.close()

    def close(self):
        self.listener.close()


@pytest.fixture
def hanging_up(settings, monkeypatch):
    from agui_project import redis_client as clients

    server = HangingUp()
    settings.REDIS_URL = server.url
    monkeypatch.setattr(clients, "_client", None)  # the quick clients follow REDIS_URL
    yield server
    server.close()
    monkeypatch.setattr(clients, "_client", None)  # the quick clients follow REDIS_URL


def test_a_redis_that_is_down_is_asked_once(client, hanging_up):
    """The probe does not ride out an outage as the product's own client does (its retries take
    ~11 s): it connects once, and the answer is a 503."""
    resp = client.get("/healthz")
    assert resp.status_code == 503 and resp.json()["redis"].startswith("error: ")
    assert hanging_up.accepted == 1


def test_the_products_client_tries_a_command_retries_plus_one_times(settings, hanging_up):
    """Not (retries + 1)²: redis-py's connection health check, with its own retries inside each
    retry of the command, made one command against such a proxy take minutes."""
    from agui_project.redis_client import redis_client

    settings.AGUI_REDIS_RETRIES = 3
    with pytest.raises(redis.ConnectionError):
        redis_client().ping()
    assert hanging_up.accepted == 4


@pytest.fixture
def database_down(django_db_blocker, monkeypatch):
    """`health.connection` as a pooled PostgreSQL connection to a port that refuses (a database
    restarting or gone), its pool willing to wait 5 s for a connection as requests do."""
    import socket

    from django.conf import settings
    from django.db.utils import ConnectionHandler

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        pytest.skip("the pool is PostgreSQL's")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    handler = ConnectionHandler({"default": {**db, "OPTIONS": {}}, "down": {
        **db, "HOST": "127.0.0.1", "PORT": closed.getsockname()[1],
        "OPTIONS": {**db["OPTIONS"], "pool": {"min_size": 1, "max_size": 2, "timeout": 5}}}})
    monkeypatch.setattr(health, "connection", handler["down"])
    pool, asked = handler["down"].pool, []  # the timeout of each wait for a connection

    def getconn(timeout=None):
        asked.append(timeout)
        return type(pool).getconn(pool, timeout=timeout)

    monkeypatch.setattr(pool, "getconn", getconn)
    with django_db_blocker.unblock():
        yield asked
        handler["down"].close_pool()
    closed.close()


def test_a_database_that_is_down_is_reported_within_the_probes_own_timeout(client, pings, database_down, monkeypatch):
    """A request waits the pool's timeout for a connection (10 s), as it should while the database
    restarts; the probe answered the load balancer only after that, a web thread held per probe."""
    monkeypatch.setattr(health, "DB_PROBE_TIMEOUT", 0.2, raising=False)
    pings(silent=0)
    resp = client.get("/healthz")
    assert resp.status_code == 503
    assert resp.json()["db"] == "error: the database did not answer"  # it said "error: PoolTimeout"
    assert database_down == [0.2]  # the pool asked with the probe's timeout, not its own


@pytest.fixture
def small_pool(django_db_blocker, monkeypatch):
    """`health.connection` as a pooled PostgreSQL connection whose pool holds one connection."""
    from django.conf import settings
    from django.db.utils import ConnectionHandler

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        pytest.skip("the pool is PostgreSQL's")
    handler = ConnectionHandler({"default": {**db, "OPTIONS": {}}, "small": {
        **db, "OPTIONS": {**db["OPTIONS"], "pool": {"min_size": 1, "max_size": 1, "timeout": 5}}}})
    monkeypatch.setattr(health, "connection", handler["small"])
    monkeypatch.setattr(health, "DB_PROBE_TIMEOUT", 0.2, raising=False)
    with django_db_blocker.unblock():
        yield handler["small"].pool
        handler["small"].close_pool()


def test_a_pool_used_up_by_this_process_is_not_blamed_on_the_database(client, pings, small_pool):
    """Every connection of this process's pool lent out (open SSE streams, requests waiting on a row
    lock): its PoolTimeout said "the database did not answer" while PostgreSQL answered every other
    process, and an operator went looking at PostgreSQL (outside test, faults.md F7)."""
    pings(silent=0)
    assert client.get("/healthz").json()["db"] == "ok"
    held = small_pool.getconn()
    try:
        assert small_pool.lent == 1 and small_pool.used_up()
        resp = client.get("/healthz")
        assert resp.status_code == 503
        assert resp.json()["db"] == "error: no free connection in this process's pool"
    finally:
        small_pool.putconn(held)
    assert small_pool.lent == 0
    assert client.get("/healthz").json()["db"] == "ok"


def test_a_sweeps_mark_lost_with_redis_turns_late_a_minute_after_this_process_missed_it(client, pings, monkeypatch):
    """Redis restarted empty while the beat was down: the sweeps' mark was gone, and `sweeps` said
    "none yet", as on a new stack, for as long as the beat stayed down (outside test, faults.md F6).
    It is "none yet" for SWEEPS_LATE_AFTER from this process's first look without a mark, then late."""
    from agents.runtime import execution
    from agui_project.redis_client import redis_client

    now = [1000.0]
    monkeypatch.setattr(health, "unswept", health._Unswept(clock=lambda: now[0]))
    pings(silent=0)
    assert client.get("/healthz").json()["sweeps"] == "none yet"
    now[0] += health.SWEEPS_LATE_AFTER
    assert client.get("/healthz").json()["sweeps"] == "none yet"
    now[0] += 30
    plain = client.get("/healthz")
    assert plain.status_code == 200  # the load balancer's probe: told only, as for a lapsed mark
    assert plain.json()["sweeps"] == f"none for {health.SWEEPS_LATE_AFTER + 30} s"
    assert client.get("/healthz?require=beat").status_code == 503

    execution.stuck_call_ids()  # the beat is back: a sweep
    assert client.get("/healthz?require=beat").json()["sweeps"] == "ok"
    redis_client().delete(execution.LEASES_SWEPT_KEY)  # Redis restarted empty, the beat down again
    now[0] += 600
    assert client.get("/healthz").json()["sweeps"] == "none yet"  # counted from this look, not the last
    now[0] += health.SWEEPS_LATE_AFTER + 1
    assert client.get("/healthz").json()["sweeps"] == f"none for {health.SWEEPS_LATE_AFTER + 1} s"


def test_a_beat_that_stopped_sweeping_is_told_and_fails_the_beats_probe(client, pings):
    """With the beat down every page and run still worked, and nothing said that deadlines no longer
    expired or escalated nor dead workers' runs were recovered: `sweeps` says when recovery last
    swept, and `?require=beat` fails once that is over a minute ago (the beat sends one every 10 s)."""
    from agents.runtime import execution
    from agui_project.redis_client import redis_client

    pings(silent=0)
    assert client.get("/healthz?require=beat").status_code == 503  # none on record yet
    execution.stuck_call_ids()  # a sweep, as the beat's task runs it
    fresh = client.get("/healthz?require=worker,beat")
    assert fresh.status_code == 200 and fresh.json()["sweeps"] == "ok", fresh.json()
    seconds = redis_client().time()[0]
    redis_client().set(execution.LEASES_SWEPT_KEY, (seconds - 300) * 1000)  # the last one, five minutes ago
    plain = client.get("/healthz")
    assert plain.status_code == 200  # the load balancer's probe: told only
    late = plain.json()["sweeps"].removeprefix("none for ").removesuffix(" s")
    assert late.isdigit() and 300 <= int(late) < 330, plain.json()  # (a second may turn meanwhile)
    assert client.get("/healthz?require=beat").status_code == 503


@pytest.mark.parametrize("https", [False, True], ids=["http", "AGUI_HTTPS"])
def test_a_probe_at_the_processs_own_address_is_answered(client, pings, settings, https):
    """Load balancers and Kubernetes probe each web process at its address (Host: 10.0.0.11:8000), not
    by the public name DJANGO_ALLOWED_HOSTS lists: every such probe was a 400 (DisallowedHost), and
    the balancer took every web process out of service. Other paths keep the Host check."""
    pings(silent=0)
    settings.ALLOWED_HOSTS = ["agui.example"]
    settings.SECURE_SSL_REDIRECT = https
    resp = client.get("/healthz", HTTP_HOST="10.0.0.11:8000")
    assert resp.status_code == 200, resp.content[:300]
    assert resp.json()["db"] == "ok" and resp.json()["redis"] == "ok"
    assert client.get("/accounts/login/", HTTP_HOST="10.0.0.11:8000").status_code == 400


async def test_a_probe_at_the_processs_own_address_is_answered_under_asgi(async_client, pings, settings):
    pings(silent=0)
    settings.ALLOWED_HOSTS = ["agui.example"]
    resp = await async_client.get("/healthz", headers={"host": "10.0.0.11:8000"})
    assert resp.status_code == 200 and resp.json()["redis"] == "ok"
    assert (await async_client.get("/accounts/login/", headers={"host": "10.0.0.11:8000"})).status_code == 400
