"""`make bench`: the six figures of issue 9, measured on the real stack.

Starts Redis (embedded when REDIS_URL is unset; else a spare database of that server), a fresh
database (a temporary SQLite file, or a fresh `<name>_bench` database on the PostgreSQL server
that DATABASE_URL names), the benchmark model (bench/fake_llm_server.py: tests/fake_llm.py's
FakeLLM in its own process, streaming as fast as it can), a Celery worker and Daphne, each as a
child process (scripts/devstack.py). Then, as clients over real sockets:

1. decision -> resume: decide API call returned -> TOOL_CALL_RESULT on the thread WebSocket
2. streaming: a 2,000-word answer over SSE and over the WebSocket: model chunks per second end
   to end, and model chunk -> client event latency per chunk
3. time to first event: POST /agui/<agent>/ -> RUN_STARTED
4. paused runs: busy worker slots and memory of worker and Daphne, idle vs 10,000 paused runs
5. inbox at scale: the first page with filters among 100,000 requests (1,000 pending), EXPLAIN
6. fan-out: 500 WebSocket clients on one thread, every event to every client, delivery latency
7. MCP: what a listed MCP tool call adds over the tool's own time (bench/mcp_call.py)
8. a model call's start: call -> first streamed delta for 4 to 100 messages, our model client
   and the OpenAI SDK's own create() on the same request (bench/model_call.py)

and, side by side with the peer (bench/peer_app.py: Microsoft Agent Framework's AG-UI server on
the same fake model, started from .venv-maf in the same run, each figure measured alternately on
both with the same SSE client): POST -> RUN_STARTED, AG-UI resume sent -> TOOL_CALL_RESULT, a
2,000-word answer's wall time, and CPU per streamed token / per resume of each side's processes.
Worker (and Daphne) CPU per streamed token and per decision come with scenarios 1 and 2.

Writes bench/results.json and prints a markdown table with the machine it ran on.

    python bench/run.py [--quick] [--only NAME,...] [--profile NAME,...] [--no-peer]
    python bench/run.py --scale [--quick]   # 1 web + 1 worker, then 2 + 2 (bench/scale.py)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import devstack  # noqa: E402
import rawws  # noqa: E402
from cpu import CpuMeter, per_unit_us  # noqa: E402
from rawhttp import Connection  # noqa: E402

PY = sys.executable
MAF_VENV = ROOT / ".venv-maf"
LOG_DIR = ROOT / "var" / "bench-logs"
PROFILE_DIR = ROOT / "var" / "bench-profiles"
RESULTS = ROOT / "bench" / "results.json"
BENCH_REDIS_DB = 13
PASSWORD = "bench-" + secrets.token_hex(4)
TRANSFER = "Transfer $1 from account 1234567890 to account 0987654321"

FULL = dict(decisions=200, stream_reps=5, stream_words=2000, ttfe_reps=60, paused_total=10_000,
            paused_real=100, inbox_total=100_000, inbox_pending=1_000, inbox_reps=60, fanout_clients=500,
            fanout_words=100, fanout_runs=5, peer_reps=60, peer_resume_reps=40, peer_stream_reps=5, mcp_calls=500,
            model_reps=40)
QUICK = dict(decisions=40, stream_reps=2, stream_words=2000, ttfe_reps=15, paused_total=1_000,
             paused_real=40, inbox_total=10_000, inbox_pending=1_000, inbox_reps=30, fanout_clients=100,
             fanout_words=50, fanout_runs=2, peer_reps=20, peer_resume_reps=12, peer_stream_reps=3, mcp_calls=100,
             model_reps=12)
SCENARIOS = ["ttfe", "peer", "streaming", "decisions", "paused", "fanout", "inbox", "mcp", "model"]


def log(msg: str) -> None:
    print(f"[bench] {msg}", flush=True)


# ---------------------------------------------------------------- statistics

def pct(values, p):
    """p-th percentile, linear interpolation between closest ranks."""
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary(values, digits=2):
    if not values:
        return {"n": 0}
    r = lambda v: round(v, digits)  # noqa: E731
    return {"n": len(values), "p50": r(pct(values, 50)), "p95": r(pct(values, 95)), "mean": r(statistics.fmean(values)),
            "min": r(min(values)), "max": r(max(values))}


# ---------------------------------------------------------------- the stack

def _redis_db_url(url: str, db: int) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def _pg_bench_url(url: str):
    """(bench database url, admin connection url, name): a fresh database beside the named one."""
    parts = urlsplit(url)
    name = (parts.path.lstrip("/") or "postgres") + "_bench"
    return urlunsplit(parts._replace(path=f"/{name}")), urlunsplit(parts._replace(path="/postgres")), name


def _pg_admin(admin_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql)


def proc_tree_rss(pid: int) -> dict:
    """RSS and USS (MiB) of a process and its children (a prefork worker's pool)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {"rss_mib": None, "uss_mib": None, "processes": 0}
    rss = uss = 0
    for p in procs:
        with suppress(psutil.Error):
            info = p.memory_full_info()
            rss += info.rss
            uss += info.uss
    return {"rss_mib": round(rss / 2**20, 1), "uss_mib": round(uss / 2**20, 1), "processes": len(procs)}


class Stack:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="agui-bench-"))
        self.children: list[devstack.Child] = []
        self.redis = None
        self.pg_drop = None
        self.env: dict = {}
        self.url = ""
        self.machine: dict = {}
        self.peer_url = None
        self.peer_note = "not started (--no-peer)"

    def djtask(self, *argv, timeout=600) -> dict:
        out = subprocess.run([PY, str(ROOT / "bench" / "djtasks.py"), *argv], cwd=ROOT, env=self.env,
                             capture_output=True, text=True, timeout=timeout)
        if out.returncode:
            raise RuntimeError(f"djtasks {argv[0]} failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    def start(self) -> None:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
        if env.get("REDIS_URL"):  # a shared server: a spare database, emptied first
            import redis

            env["REDIS_URL"] = _redis_db_url(env["REDIS_URL"], BENCH_REDIS_DB)
            redis.Redis.from_url(env["REDIS_URL"]).flushdb()
        else:
            self.redis = devstack.start_embedded_redis()
            env["REDIS_URL"] = self.redis.url
        db_url = env.get("DATABASE_URL", "")
        if db_url.startswith(("postgres://", "postgresql://")):
            bench_url, admin_url, name = _pg_bench_url(db_url)
            _pg_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}"')
            _pg_admin(admin_url, f'CREATE DATABASE "{name}"')
            self.pg_drop = (admin_url, name)
            env["DATABASE_URL"] = bench_url
        else:
            env["DATABASE_URL"] = f"sqlite:///{self.tmp / 'bench.sqlite3'}"
        env.update({
            "AGUI_VAR_DIR": str(self.tmp),
            "DJANGO_SETTINGS_MODULE": "agui_project.settings",
            "DJANGO_DEBUG": "0",  # production settings: no query log, secure cookies
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DEMO_PASSWORD": PASSWORD,
            "LOG_LEVEL": "WARNING",
            "CELERY_TASK_DEFAULT_QUEUE": "agui-bench",
            # one account starts every run of a bench: never refused (its one count per start still runs)
            "AGUI_MAX_RUNS_PER_HOUR": "1000000000",
            "PYTHONUNBUFFERED": "1",
        })
        self.env = env
        for argv in (["migrate", "--noinput"], ["seed_demo"]):
            log(f"manage.py {argv[0]}")
            with open(LOG_DIR / f"manage-{argv[0]}.log", "wb") as out:
                if subprocess.call([PY, "manage.py", *argv], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT):
                    raise RuntimeError(f"manage.py {argv[0]} failed; see {LOG_DIR}")
        # the model, in its own process so that it never competes with the client for a GIL
        llm_log = LOG_DIR / "fake-llm.log"
        llm = devstack.spawn("llm", [PY, str(ROOT / "bench" / "fake_llm_server.py"), "--port", "0"], env=env,
                             log_path=llm_log)
        self.children.append(llm)
        deadline = time.monotonic() + 20
        base_url = None
        while time.monotonic() < deadline and base_url is None:
            m = re.search(r"ready (\S+)", llm_log.read_text() if llm_log.exists() else "")
            base_url = m[1] if m else None
            time.sleep(0.05)
        if not base_url:
            raise RuntimeError(f"the fake model did not start:\n{llm.tail()}")
        env.update({"OPENAI_API_KEY": "bench-key", "OPENAI_BASE_URL": base_url, "AGUI_MODEL": "fake-model"})
        if getattr(self.args, "peer", False):
            self.start_peer(base_url)
        self.start_servers()
        self.machine = self._machine()

    def start_servers(self) -> None:
        """One Celery worker and one Daphne (no beat: no periodic sweeps in the measurements)."""
        port = devstack.free_port()
        for name, cmd in devstack.stack_commands("127.0.0.1", str(port), str(self.tmp / "beat"),
                                                 pool=self.args.pool, concurrency=str(self.args.concurrency)):
            if name == "beat":
                continue
            if name == "web":  # no access log line per request and per WebSocket frame
                cmd = [*cmd, "--verbosity", "0"]
            self.children.append(devstack.spawn(name, cmd, env=self.env, log_path=LOG_DIR / f"{name}.log"))
        self.url = f"http://127.0.0.1:{port}"
        log("waiting for /healthz")
        devstack.wait_healthy(self.url, self.children, timeout=90)

    def start_peer(self, model_url: str) -> None:
        """bench/peer_app.py under .venv-maf's python (one uvicorn worker) on the same fake model."""
        if not (MAF_VENV / ".installed").exists():
            self.peer_note = ".venv-maf is missing or incomplete (make bench builds it from tests/maf_client/requirements.txt)"
            log(f"peer skipped: {self.peer_note}")
            return
        log_path = LOG_DIR / "peer.log"
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
        env.update({"PEER_MODEL_URL": model_url, "PYTHONUNBUFFERED": "1"})
        child = devstack.spawn("peer", [str(MAF_VENV / "bin" / "python"), str(ROOT / "bench" / "peer_app.py"),
                                        "--port", "0"], env=env, log_path=log_path)
        self.children.append(child)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"ready (\S+)", log_path.read_text() if log_path.exists() else "")
            if m and devstack.http_status(m[1] + "/healthz")[0] == 200:
                self.peer_url, self.peer_note = m[1], "agent-framework-ag-ui 1.7.0, one uvicorn worker"
                return
            if not child.alive():
                break
            time.sleep(0.1)
        raise RuntimeError(f"the peer did not start:\n{child.tail()}")

    def pid(self, name: str) -> int:
        return next(c.proc.pid for c in self.children if c.name == name)

    def memory(self) -> dict:
        return {"worker": proc_tree_rss(self.pid("worker")), "daphne": proc_tree_rss(self.pid("web"))}

    def busy_slots(self) -> dict:
        out = subprocess.run([PY, "-m", "celery", "-A", "agui_project", "inspect", "active", "-j", "-t", "3"],
                             cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
        reserved = subprocess.run([PY, "-m", "celery", "-A", "agui_project", "inspect", "reserved", "-j", "-t", "3"],
                                  cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)

        def count(text):
            m = re.search(r"\{.*\}", text, re.S)
            if not m:
                return None
            return sum(len(v) for v in json.loads(m[0]).values())

        return {"active": count(out.stdout), "reserved": count(reserved.stdout)}

    def _machine(self) -> dict:
        import redis

        cpu = "unknown"
        with suppress(OSError):
            m = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
            cpu = m[1].strip() if m else cpu
        ram = None
        with suppress(OSError):
            m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
            ram = round(int(m[1]) / 2**20, 1) if m else None
        info = self.djtask("counts")
        rinfo = redis.Redis.from_url(self.env["REDIS_URL"]).info("server")
        return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gib": ram, "python": platform.python_version(),
                "db": info["vendor"] + " " + info.get("version", ""),
                "redis": rinfo.get("redis_version"), "worker": f"celery {self.args.pool} x{self.args.concurrency}",
                "embedded_redis": self.redis is not None}

    def stop(self) -> None:
        devstack.stop_children(self.children, timeout=10)
        if self.redis:
            self.redis.stop()
        if self.pg_drop:
            with suppress(Exception):
                _pg_admin(self.pg_drop[0], f'DROP DATABASE IF EXISTS "{self.pg_drop[1]}" WITH (FORCE)')
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------- clients

class Client:
    """HTTP (httpx; bench/rawhttp.py for the timed calls) and WebSocket (bench/rawws.py) access to
    the stack as the demo users."""

    def __init__(self, stack: Stack, url: str | None = None):
        import httpx

        self.stack = stack
        self.url = url or stack.url  # one of several web processes (bench/scale.py)
        self.http = httpx.AsyncClient(base_url=self.url, timeout=60,
                                      limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))
        self.raw = Connection.for_url(self.url)  # the timed requests (bench/rawhttp.py: httpx costs ms)
        self.idle: list[Connection] = []  # kept-alive connections for sse()
        self.tokens: dict = {}
        self.sessions: dict = {}
        self.origin = self.url

    async def setup(self):
        self.tokens = self.stack.djtask("tokens")
        for user in ("alice", "finn", "admin"):
            self.sessions[user] = await self.login(user)

    async def close(self):
        await self.http.aclose()
        for conn in [self.raw, *self.idle]:
            await conn.close()

    async def login(self, username: str) -> str:
        """The real login form; returns the session id (cookies are Secure when DEBUG is off,
        so they are carried by hand over plain http)."""
        r = await self.http.get("/accounts/login/")
        csrf = r.cookies.get("csrftoken")
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', r.text)[1]
        r = await self.http.post("/accounts/login/", data={"username": username, "password": PASSWORD,
                                                           "csrfmiddlewaretoken": form_token},
                                 headers={"Cookie": f"csrftoken={csrf}", "Referer": self.url + "/accounts/login/"})
        self.http.cookies.clear()
        session = r.cookies.get("sessionid")
        if r.status_code != 302 or not session:
            raise RuntimeError(f"login as {username} failed: {r.status_code}")
        return session

    def auth(self, user: str) -> dict:
        return {"Authorization": f"Token {self.tokens[user]}"}

    def session_headers(self, user: str) -> dict:
        return {"Cookie": f"sessionid={self.sessions[user]}"}

    async def api(self, method: str, path: str, user: str, **kw):
        r = await self.http.request(method, path, headers=self.auth(user), **kw)
        if r.status_code >= 400:
            raise RuntimeError(f"{method} {path} -> {r.status_code}: {r.text[:300]}")
        return r.json()

    async def new_thread(self, user="alice") -> str:
        return (await self.api("POST", "/api/threads/", user, json={"agent": "banking"}))["id"]

    async def post_message(self, thread_id: str, content: str, user="alice") -> str:
        return (await self.api("POST", f"/api/threads/{thread_id}/messages/", user, json={"content": content}))["run_id"]

    async def wait_run(self, run_id: str, statuses=("interrupted", "succeeded", "failed", "cancelled"), timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = await self.api("GET", f"/api/runs/{run_id}/", "alice")
            if run["status"] in statuses:
                return run
            await asyncio.sleep(0.05)
        raise TimeoutError(f"run {run_id} still {run['status']} after {timeout}s")

    @asynccontextmanager
    async def ws(self, thread_id: str, user="alice"):
        url = self.url.replace("http://", "ws://") + f"/ws/threads/{thread_id}/"
        headers = {**self.session_headers(user), "Origin": self.origin}
        if WS_CLIENT["library"] == "websockets":  # --ws-client websockets: the earlier rounds' client
            from websockets.asyncio.client import connect

            async with connect(url, additional_headers=headers, max_size=None, open_timeout=60,
                               ping_interval=None, compression=None) as sock:
                yield sock
        else:
            async with rawws.connect(url, headers) as sock:
                yield sock

    async def sse(self, agent: str, body: dict, user="alice"):
        """Yields (perf_counter, wall µs, event dict) for each SSE frame of a POST /agui/<agent>/, on
        an idle kept-alive connection (several clients may share this object: bench/scale.py)."""
        conn = self.idle.pop() if self.idle else Connection.for_url(self.url)
        try:
            async for frame in conn.sse(f"/agui/{agent}/", body, {"Authorization": "Bearer " + self.tokens[user]}):
                yield frame
        finally:
            if conn.busy:  # left before the response's end: its connection cannot carry another
                await conn.close()
            else:
                self.idle.append(conn)

    async def decide(self, approval_id: str, user="finn") -> dict:
        """POST /api/approvals/<id>/decide/ (approve) over the raw connection: the timed call."""
        status, _head, body = await self.raw.request(
            "POST", f"/api/approvals/{approval_id}/decide/", json.dumps({"decision": "approve"}).encode(),
            {**self.auth(user), "Content-Type": "application/json"})
        if status != 200:
            raise RuntimeError(f"decide {approval_id} -> {status}: {body[:300]!r}")
        return json.loads(body)


def run_input(thread_id: str, text: str) -> dict:
    return {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": f"msg-{uuid.uuid4()}", "role": "user", "content": text}]}


WS_CLIENT = {"library": "lean"}  # set from --ws-client


def socket_events(raw):
    """A thread-socket frame's events: one event object, or an array of those ready together."""
    data = json.loads(raw)
    return data if isinstance(data, list) else [data]


async def read_until(sock, predicate, timeout=60.0):
    """Events (perf_counter, wall µs, event) until one matches `predicate`; the rest of that
    event's frame is kept on the socket for the next read."""
    out = []
    pending = sock.__dict__.setdefault("pending_events", [])
    deadline = time.monotonic() + timeout
    while True:
        if not pending:
            now, wall, raw = await asyncio.wait_for(recv_timed(sock), timeout=max(0.1, deadline - time.monotonic()))
            pending.extend((now, wall, event) for event in socket_events(raw))
        out.append(pending.pop(0))
        if predicate(out[-1][2]):
            return out


async def recv_timed(sock):
    """(perf_counter, wall µs, message): stamped on arrival by the lean client, on return otherwise."""
    if isinstance(sock, rawws.WebSocket):
        return await sock.recv_timed()
    raw = await sock.recv()
    return time.perf_counter(), time.time_ns() // 1000, raw


def is_end(event) -> bool:
    return event.get("type") in ("RUN_FINISHED", "RUN_ERROR")


async def snapshots(sock):
    """A fresh socket sends MESSAGES_SNAPSHOT, STATE_SNAPSHOT and the approvals card first."""
    return await read_until(sock, lambda e: e.get("type") == "CUSTOM" and e.get("name") == "approvals")


# ---------------------------------------------------------------- scenarios

async def bench_ttfe(c: Client, cfg) -> dict:
    """POST /agui/banking/ -> the RUN_STARTED frame (each run read to its end before the next)."""
    firsts, totals = [], []
    for i in range(cfg["ttfe_reps"] + 3):
        t0 = time.perf_counter()
        first = None
        async for now, _wall, event in c.sse("banking", run_input(f"bench-ttfe-{uuid.uuid4()}", "hello")):
            if first is None:
                first = now
                assert event["type"] == "RUN_STARTED", event
        if i >= 3:  # the first runs warm connections and imports
            firsts.append((first - t0) * 1000)
            totals.append((time.perf_counter() - t0) * 1000)
    # the floor under any request: Daphne, the middleware chain, URL resolution; no database
    floor = []
    for i in range(cfg["ttfe_reps"] + 3):
        t0 = time.perf_counter()
        status, _head, _body = await c.raw.request("GET", "/api/no-such-route/")
        if status != 404:
            raise RuntimeError(f"GET /api/no-such-route/ -> {status}")
        if i >= 3:
            floor.append((time.perf_counter() - t0) * 1000)
    return {"first_event_ms": summary(firsts), "whole_run_ms": summary(totals), "floor_404_ms": summary(floor)}


CANCEL = "Cancel my subscription sub_123"  # approved by the requester herself: an AG-UI resume answers it


async def read_run(frames_iter, until=None):
    """Frames of one SSE run to its end; with `until`, also the perf_counter of the first frame
    matching it."""
    frames, hit = [], None
    async for frame in frames_iter:
        frames.append(frame)
        if until is not None and hit is None and until(frame[2]):
            hit = frame[0]
    return frames, hit


async def started_run(post, label):
    """POST /agui/<agent>/ of a one-line message through `post` (body -> SSE frames), read to its
    end: (perf_counter at the send, the frames), checked to start and finish."""
    t0 = time.perf_counter()
    frames, _ = await read_run(post(run_input(f"bench-{uuid.uuid4()}", "hello")))
    if frames[0][2]["type"] != "RUN_STARTED" or frames[-1][2]["type"] != "RUN_FINISHED":
        raise RuntimeError(f"{label}: {frames[0][2]} ... {frames[-1][2]}")
    return t0, frames


async def floor_404(conn, label) -> float:
    """ms of a GET that no route answers: the server and the framework, no database."""
    t0 = time.perf_counter()
    status, _head, _body = await conn.request("GET", "/api/no-such-route/")
    if status != 404:
        raise RuntimeError(f"{label}: GET /api/no-such-route/ -> {status}")
    return (time.perf_counter() - t0) * 1000


async def resume_body(post, label):
    """A run paused on the requester's own cancel_subscription, and the AG-UI resume a client sends
    for it: the paused run's messages (its last MESSAGES_SNAPSHOT) and an approval of each interrupt."""
    thread_id = f"bench-resume-{uuid.uuid4()}"
    frames, _ = await read_run(post(run_input(thread_id, CANCEL)))
    end = frames[-1][2]
    interrupts = (end.get("outcome") or {}).get("interrupts") or []
    if not interrupts:
        raise RuntimeError(f"{label}: the cancel did not pause: {end}")
    snapshot = [f[2]["messages"] for f in frames if f[2]["type"] == "MESSAGES_SNAPSHOT"][-1]
    return {**run_input(thread_id, ""), "messages": snapshot,
            "resume": [{"interruptId": it["id"], "status": "resolved", "payload": {"approved": True}}
                       for it in interrupts]}


async def resume_result(post, body, label) -> float:
    """perf_counter of the resume's TOOL_CALL_RESULT (its run read to its end)."""
    frames, hit = await read_run(post(body), until=lambda e: e.get("type") == "TOOL_CALL_RESULT")
    if hit is None or frames[-1][2]["type"] != "RUN_FINISHED":
        raise RuntimeError(f"{label}: the resume gave no tool result: {[f[2]['type'] for f in frames]}")
    return hit


async def bench_peer(c: Client, stack: Stack, cfg) -> dict:
    """The figures a single-process AG-UI server has too, measured on this project and on the
    peer alternately (one run of each in turn, so that both see the same machine), with the same
    SSE client: POST -> RUN_STARTED; AG-UI resume sent -> TOOL_CALL_RESULT (a cancel_subscription
    the requester approves in the resume); a 2,000-word answer's wall time, POST -> RUN_FINISHED.
    CPU: this project's worker and Daphne trees, the peer's process, per streamed token and per
    resume (the model's process is shared and not counted)."""
    if not stack.peer_url:
        return {"skipped": stack.peer_note}
    peer_http = Connection.for_url(stack.peer_url)
    conns = {"ours": c.raw, "peer": peer_http}
    sides = {
        "ours": lambda body: c.raw.sse("/agui/banking/", body, {"Authorization": "Bearer " + c.tokens["alice"]}),
        "peer": lambda body: peer_http.sse("/agui/banking", body, {}),
    }
    meters = {"ours": CpuMeter({"worker": stack.pid("worker"), "web": stack.pid("web")}),
              "peer": CpuMeter({"peer": stack.pid("peer")})}
    out = {side: {} for side in sides}
    try:
        # POST -> RUN_STARTED of a one-line answer
        firsts, floors = {side: [] for side in sides}, {side: [] for side in sides}
        stored = []  # ours: POST -> MESSAGES_SNAPSHOT, the first event sent after the run's writes
        for i in range(cfg["peer_reps"] + 3):
            for side, post in sides.items():
                t0, frames = await started_run(post, side)
                floor = await floor_404(conns[side], side)
                if i >= 3:  # the first runs warm connections and imports
                    firsts[side].append((frames[0][0] - t0) * 1000)
                    floors[side].append(floor)
                    if side == "ours":
                        stored.append(next((f[0] - t0) * 1000 for f in frames if f[2]["type"] == "MESSAGES_SNAPSHOT"))
        # AG-UI resume sent -> TOOL_CALL_RESULT, as a client does it (resume_body)
        resumes, resume_cpu = {side: [] for side in sides}, {side: {} for side in sides}
        for i in range(cfg["peer_resume_reps"] + 2):
            for side, post in sides.items():
                body = await resume_body(post, side)
                with meters[side].phase() as used:
                    t0 = time.perf_counter()
                    hit = await resume_result(post, body, side)
                if i >= 2:
                    resumes[side].append((hit - t0) * 1000)
                    for name, sec in used.items():
                        resume_cpu[side][name] = resume_cpu[side].get(name, 0.0) + sec
        # a 2,000-word answer (the model flat out), POST -> RUN_FINISHED
        walls, stream_cpu = {side: [] for side in sides}, {side: {} for side in sides}
        words = cfg["stream_words"]
        for _ in range(cfg["peer_stream_reps"]):
            for side, post in sides.items():
                with meters[side].phase() as used:
                    t0 = time.perf_counter()
                    frames, _ = await read_run(post(run_input(f"bench-peer-{uuid.uuid4()}", f"BENCH-STREAM {words}")))
                    wall = (frames[-1][0] - t0) * 1000
                if frames[-1][2]["type"] != "RUN_FINISHED":
                    raise RuntimeError(f"{side} stream ended with {frames[-1][2]}")
                stream_figures(frames, words)  # every stamped chunk arrived
                walls[side].append(wall)
                for name, sec in used.items():
                    stream_cpu[side][name] = stream_cpu[side].get(name, 0.0) + sec
    finally:
        await peer_http.close()
    for side in sides:
        out[side] = {"first_event_ms": summary(firsts[side]), "floor_404_ms": summary(floors[side]), "resume_to_result_ms": summary(resumes[side]),
                     "answer_2000_words_ms": summary(walls[side]),
                     "cpu_us_per_token": per_unit_us(stream_cpu[side], words * cfg["peer_stream_reps"]),
                     "cpu_us_per_resume": per_unit_us(resume_cpu[side], len(resumes[side]))}
    out["ours"]["stored_ms"] = summary(stored)
    out["peer"]["server"] = stack.peer_note
    return out


def stream_figures(frames, words) -> dict:
    """Per stamped chunk: client receipt - model send (ms); rate over the whole answer."""
    lat, stamps, events = [], [], 0
    last_recv = None
    for _now, wall, event in frames:
        if event.get("type") != "TEXT_MESSAGE_CONTENT":
            continue
        events += 1
        last_recv = wall
        for word in event["delta"].split():
            if word.isdigit():
                stamps.append(int(word))
                lat.append((wall - int(word)) / 1000)
    if len(stamps) != words:
        raise RuntimeError(f"expected {words} stamped chunks, got {len(stamps)}")
    span = (last_recv - min(stamps)) / 1e6
    return {"chunks_per_s": words / span, "client_events": events, "latency_ms": lat,
            "model_send_chunks_per_s": words / max(1e-6, (max(stamps) - min(stamps)) / 1e6)}


PACED_WORDS, PACED_RATE = 1000, 1000


async def bench_streaming(c: Client, stack: Stack, cfg) -> dict:
    """Flat out (the model as fast as the socket takes it: throughput, and the queueing it causes)
    and paced at PACED_RATE chunks/s (faster than any real model; the pipeline's own latency)."""
    out = {}
    for transport, words, text in (
        ("sse", cfg["stream_words"], f"BENCH-STREAM {cfg['stream_words']}"),
        ("ws", cfg["stream_words"], f"BENCH-STREAM {cfg['stream_words']}"),
        ("sse paced", PACED_WORDS, f"BENCH-STREAM {PACED_WORDS} @{PACED_RATE}"),
        ("ws paced", PACED_WORDS, f"BENCH-STREAM {PACED_WORDS} @{PACED_RATE}"),
    ):
        rates, model_rates, lat, events = [], [], [], []
        meter = CpuMeter({"worker": stack.pid("worker"), "web": stack.pid("web")})
        with meter.phase() as used:
            await _stream_reps(c, cfg, transport, words, text, rates, model_rates, lat, events)
        out[transport] = {"chunks_per_s": summary(rates, 0), "model_send_chunks_per_s": summary(model_rates, 0),
                          "added_ms_per_chunk": summary(lat), "client_text_events": summary(events, 0),
                          "cpu_us_per_token": per_unit_us(used, words * cfg["stream_reps"])}
    return out


async def _stream_reps(c: Client, cfg, transport, words, text, rates, model_rates, lat, events) -> None:
    """The runs of one transport, their figures appended to the lists."""
    for _ in range(cfg["stream_reps"]):
        if transport.startswith("sse"):
            frames = []
            async for frame in c.sse("banking", run_input(f"bench-sse-{uuid.uuid4()}", text)):
                frames.append(frame)
                if is_end(frame[2]):
                    break
        else:
            thread_id = await c.new_thread()
            async with c.ws(thread_id) as sock:
                await snapshots(sock)
                await c.post_message(thread_id, text)
                frames = await read_until(sock, is_end, timeout=120)
        if not any(f[2]["type"] == "RUN_FINISHED" for f in frames):
            raise RuntimeError(f"{transport} stream ended with {frames[-1][2]}")
        fig = stream_figures(frames, words)
        rates.append(fig["chunks_per_s"])
        model_rates.append(fig["model_send_chunks_per_s"])
        lat.extend(fig["latency_ms"])
        events.append(fig["client_events"])


async def paused_runs(c: Client, n: int, concurrency=8) -> list[tuple[str, str]]:
    """n transfer runs through the real path (REST -> worker -> policy -> pause): [(thread, run)]."""
    sem = asyncio.Semaphore(concurrency)

    async def one():
        async with sem:
            thread_id = await c.new_thread()
            run_id = await c.post_message(thread_id, TRANSFER)
            run = await c.wait_run(run_id)
            if run["status"] != "interrupted":
                raise RuntimeError(f"run {run_id} ended {run['status']}: {run.get('error')}")
            return thread_id, run_id

    return await asyncio.gather(*(one() for _ in range(n)))


async def bench_decisions(c: Client, stack: Stack, cfg) -> dict:
    """Decide API call -> TOOL_CALL_RESULT on the thread WebSocket, one decision at a time.
    CPU per decision: the worker's and Daphne's over the whole loop (for each decision also a
    GET of the pending request and a fresh WebSocket), divided by the decisions."""
    n = cfg["decisions"]
    log(f"decisions: pausing {n} transfer runs")
    paused = await paused_runs(c, n + 3)
    meter = CpuMeter({"worker": stack.pid("worker"), "web": stack.pid("web")})
    with meter.phase() as used:
        figures = await _decide_each(c, paused)
    return {**figures, "cpu_us_per_decision": per_unit_us(used, len(paused))}


async def timed_decision(c: Client, thread_id: str) -> tuple[float, float, float]:
    """finn approves the paused transfer of `thread_id` through the decide API while a thread
    WebSocket waits: (perf_counter at the call, at its return, at the TOOL_CALL_RESULT's receipt);
    returns once the continuation has ended."""
    pending = await c.api("GET", f"/api/approvals/?thread={thread_id}&status=pending", "finn")
    approval_id = pending["results"][0]["id"]
    async with c.ws(thread_id) as sock:
        await snapshots(sock)
        reader = asyncio.create_task(read_until(sock, lambda e: e.get("type") == "TOOL_CALL_RESULT", timeout=60))
        await asyncio.sleep(0)  # the reader is waiting on the socket before the call
        t0 = time.perf_counter()
        await c.decide(approval_id)
        t1 = time.perf_counter()
        frames = await reader
        if "Transferred" not in frames[-1][2]["content"]:
            raise RuntimeError(f"unexpected tool result: {frames[-1][2]['content']}")
        await read_until(sock, is_end, timeout=60)  # let the continuation finish before the next
    return t0, t1, frames[-1][0]


async def _decide_each(c: Client, paused) -> dict:
    after_return, from_call, api_ms = [], [], []
    for i, (thread_id, _run_id) in enumerate(paused):
        t0, t1, t2 = await timed_decision(c, thread_id)
        if i >= 3:
            after_return.append((t2 - t1) * 1000)
            from_call.append((t2 - t0) * 1000)
            api_ms.append((t1 - t0) * 1000)
    return {"after_api_return_ms": summary(after_return), "from_api_call_ms": summary(from_call),
            "decide_api_ms": summary(api_ms)}


async def settle_worker(stack: Stack, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        slots = stack.busy_slots()
        if slots["active"] == 0 and slots["reserved"] == 0:
            return slots
        await asyncio.sleep(0.5)
    return stack.busy_slots()


async def bench_paused(c: Client, stack: Stack, cfg) -> dict:
    await settle_worker(stack)
    idle = stack.memory()
    log(f"paused: {cfg['paused_real']} real paused runs, then rows copied up to {cfg['paused_total']}")
    t0 = time.perf_counter()
    await paused_runs(c, cfg["paused_real"])
    real_s = time.perf_counter() - t0
    cloned = stack.djtask("clone-paused", "--total", str(cfg["paused_total"]))
    slots = await settle_worker(stack)
    await asyncio.sleep(2)
    after = stack.memory()
    counts = stack.djtask("counts")

    def growth(kind):
        a, b = idle[kind]["rss_mib"], after[kind]["rss_mib"]
        return round(100 * (b - a) / a, 1) if a else None

    # still responsive with them all waiting: a new run finishes as before
    t1 = time.perf_counter()
    thread_id = await c.new_thread()
    run = await c.wait_run(await c.post_message(thread_id, "hello"))
    return {"interrupted_runs": counts["runs"].get("interrupted"), "real_paused": cfg["paused_real"],
            "real_paused_per_s": round(cfg["paused_real"] / real_s, 1), "cloned": cloned["cloned"],
            "busy_slots": slots, "memory_idle": idle, "memory_paused": after,
            "worker_rss_growth_pct": growth("worker"), "daphne_rss_growth_pct": growth("daphne"),
            "new_run_ms_with_paused": round((time.perf_counter() - t1) * 1000, 1), "new_run_status": run["status"]}


async def bench_fanout(c: Client, stack: Stack, cfg) -> dict:
    import redis

    n, runs = cfg["fanout_clients"], cfg["fanout_runs"]
    thread_id = await c.new_thread()
    # several runs, one after another (each once every socket has its end): one run's figure
    # moved by half between bench runs
    ended, run_ended = [0] * runs, [asyncio.Event() for _ in range(runs)]
    sem = asyncio.Semaphore(10)  # a connect storm past Daphne's 5 s handshake limit drops sockets
    go = asyncio.Event()
    results: list = [None] * n
    connect_ms, failures = [], []
    pending_connects = n
    all_in = asyncio.Event()

    def settled():
        nonlocal pending_connects
        pending_connects -= 1
        if pending_connects == 0:
            all_in.set()

    async def client(i):
        cm = sock = None
        async with sem:
            for attempt in range(3):
                t0 = time.perf_counter()
                try:
                    cm = c.ws(thread_id)
                    sock = await cm.__aenter__()
                    await snapshots(sock)
                    connect_ms.append((time.perf_counter() - t0) * 1000)
                    break
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    failures.append(f"client {i} attempt {attempt + 1}: {exc.__class__.__name__}: {exc}")
                    cm = sock = None
        settled()
        if sock is None:
            return
        try:
            frames = []
            await go.wait()
            # raw frames now, parsed afterwards, and one timeout for the whole read rather than a
            # task and a timer per frame (asyncio.wait_for): the clients share the machine's cores
            # with the stack (their CPU per frame is reported beside Daphne's)
            async with asyncio.timeout(120):
                for run in range(runs):
                    while True:
                        _now, wall, raw = await recv_timed(sock)
                        frames.append((wall, raw))
                        # a frame holds one event or several (an array): the run's end is in its last
                        if '"type":"RUN_FINISHED"' in raw or '"type":"RUN_ERROR"' in raw:
                            break
                    ended[run] += 1
                    if ended[run] == len(connect_ms):
                        run_ended[run].set()
            results[i] = frames
        finally:
            await cm.__aexit__(None, None, None)

    tasks = [asyncio.create_task(client(i)) for i in range(n)]
    t0 = time.perf_counter()
    await all_in.wait()
    connect_all_s = time.perf_counter() - t0
    # where the delivery's CPU goes: Daphne's tree, the worker's, and this process (the 500 clients)
    meter = CpuMeter({"web": stack.pid("web"), "worker": stack.pid("worker"), "clients": os.getpid()},
                     alone=("clients",))
    with meter.phase() as cpu:
        go.set()
        for run in range(runs):
            await c.post_message(thread_id, f"BENCH-STREAM {cfg['fanout_words']}")
            waiting = asyncio.create_task(run_ended[run].wait())
            done, _ = await asyncio.wait([waiting, *(t for t in tasks if not t.done())],
                                         return_when=asyncio.FIRST_COMPLETED)
            if waiting not in done:  # a client stopped early: this run would never end for all
                waiting.cancel()
                break
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    errors = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    ref = [json.loads(f[b"e"]) for _id, f in
           redis.Redis.from_url(stack.env["REDIS_URL"]).xrange(f"agui:thread:{thread_id}")]
    frames = sum(len(f) for f in results if f)
    received = [None if f is None else [(wall, event) for wall, raw in f for event in socket_events(raw)]
                for f in results]
    # a socket may get the tail of its snapshot (CUSTOM message_info, ...) after the approvals card
    # that snapshots() waits for: those events are not the run's
    received = [got[len(got) - len(ref):] if got is not None and len(got) >= len(ref) and all(
        e.get("type") == "CUSTOM" for _w, e in got[:len(got) - len(ref)]) else got for got in received]
    complete = sum(1 for got in received if got is not None and [e for _w, e in got] == ref)
    # each event's emit time (ms) in the worker -> its receipt
    lat = [wall / 1000 - event["timestamp"] for got in received for wall, event in got or []]
    delivered = sum(len(got) for got in received if got)
    return {"cpu_us_per_frame": per_unit_us(cpu, frames), "cpu_us_per_event": per_unit_us(cpu, delivered),
            "frames": frames, "events_delivered": delivered,
            "clients": n, "runs": runs, "connected": len(connect_ms), "connect_failures": len(failures),
            "failure_samples": failures[:5], "receive_errors": errors[:5], "events_per_client": len(ref),
            "clients_with_every_event_in_order": complete, "delivery_ms": summary(lat, 1),
            "connect_ms": summary(connect_ms, 1), "connect_all_s": round(connect_all_s, 1)}


INBOX_PAGES = ["/inbox/?status=pending", "/inbox/?status=pending&risk=high,critical", "/inbox/?status=decided"]


async def in_process(stack: Stack, script: str, *args) -> dict:
    """bench/<script> run with the stack's environment, in a process like a worker's: its last line's JSON."""
    out = await asyncio.to_thread(subprocess.run, [PY, str(ROOT / "bench" / script), *args], cwd=ROOT, env=stack.env,
                                  capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"bench/{script} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


async def bench_mcp(c: Client, stack: Stack, cfg) -> dict:
    """7. What a listed MCP tool call adds over the tool's own time (bench/mcp_call.py)."""
    return await in_process(stack, "mcp_call.py", "--calls", str(cfg["mcp_calls"]))


async def bench_model(c: Client, stack: Stack, cfg) -> dict:
    """8. A model call's start, ours and the SDK's create() (bench/model_call.py)."""
    return {"sizes": await in_process(stack, "model_call.py", "--reps", str(cfg["model_reps"]))}


async def bench_inbox(c: Client, stack: Stack, cfg) -> dict:
    log(f"inbox: seeding {cfg['inbox_total']} requests ({cfg['inbox_pending']} pending)")
    t0 = time.perf_counter()
    seeded = stack.djtask("seed-inbox", "--total", str(cfg["inbox_total"]), "--pending", str(cfg["inbox_pending"]))
    seed_s = time.perf_counter() - t0
    # the server's own time: the page rendered in-process (middleware, view, SQL, template), and
    # the SQL of one rendering with its EXPLAIN
    profile = stack.djtask("inbox-profile", "--total", str(cfg["inbox_reps"]), "--paths", *INBOX_PAGES)
    pages = {f"{user} {path}": (user, path, "session") for user in ("finn", "admin") for path in INBOX_PAGES}
    pages["finn /api/approvals/?status=pending&tool=transfer_money"] = (
        "finn", "/api/approvals/?status=pending&tool=transfer_money", "token")
    out = {}
    for name, (user, path, how) in pages.items():
        headers = c.session_headers(user) if how == "session" else c.auth(user)
        times = []
        for i in range(cfg["inbox_reps"] + 3):
            t = time.perf_counter()
            r = await c.http.get(path, headers=headers)
            elapsed = (time.perf_counter() - t) * 1000
            if r.status_code != 200:
                raise RuntimeError(f"GET {path} as {user} -> {r.status_code}")
            if i >= 3:
                times.append(elapsed)
        out[name] = summary(times)
    return {"seeded": seeded, "seed_s": round(seed_s, 1), "server": profile["pages"], "http_ms": out}


# ---------------------------------------------------------------- profiling

class Profiles:
    """py-spy record of Daphne and the worker (with its pool) while one scenario runs."""

    def __init__(self, stack: Stack, wanted: set):
        self.stack, self.wanted, self.procs = stack, wanted, []

    def start(self, scenario: str) -> None:
        if scenario not in self.wanted:
            return
        PROFILE_DIR.mkdir(parents=True, exist_ok=True)
        spy = shutil.which("py-spy") or str(Path(PY).parent / "py-spy")
        for name in ("web", "worker"):
            out = PROFILE_DIR / f"{scenario}-{name}.txt"
            cmd = [spy, "record", "--format", "raw", "--rate", "250", "--nonblocking", "-o", str(out),
                   "--pid", str(self.stack.pid(name))]
            if name == "worker":
                cmd.append("--subprocesses")
            self.procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # py-spy attaches

    def stop(self) -> None:
        import signal

        for p in self.procs:
            p.send_signal(signal.SIGINT)
        for p in self.procs:
            with suppress(subprocess.TimeoutExpired):
                p.wait(timeout=20)
        self.procs = []


# ---------------------------------------------------------------- report

TARGETS = {
    "decision_resume": "p50 ≤ 25 ms, p95 ≤ 60 ms",
    "streaming": "≥ 5,000 text events/s, ≤ 2 ms added per event (p50)",
    "ttfe": "p50 ≤ 30 ms",
    "paused": "0 busy slots; memory within 10 % of idle",
    "inbox": "p95 ≤ 50 ms",
    "fanout": "every client gets every event; p95 ≤ 50 ms",
    "mcp": "≤ 5 ms over the tool's own time",
}


def verdict(ok) -> str:
    return "—" if ok is None else ("meets" if ok else "**misses**")


def _cpu(fig: dict) -> str:
    return ", ".join(f"{name} {us} µs" for name, us in fig.items())


def _ratio(a, b) -> str:
    return f"{a / b:.2f}×" if a is not None and b else "—"


def peer_table(p: dict) -> list[str]:
    """Side by side: this project / the peer / ratio, every figure from this one run."""
    if "skipped" in p:
        return ["", f"Side by side with the peer: skipped, {p['skipped']}."]
    ours, peer = p["ours"], p["peer"]
    lines = ["", f"Side by side with the peer ({peer['server']}; same fake model, same lean "
             "HTTP client (bench/rawhttp.py), alternating runs in this one bench run):", "",
             "| figure | target (p50) | this project | the peer | ratio | verdict |", "|---|---|---|---|---|---|"]
    for key, title, target in PEER_TARGETS:
        for q in ("p50", "p95"):
            a, b = ours[key].get(q), peer[key].get(q)
            ok = target[1](a, b) if q == "p50" and a is not None and b else None
            lines.append(f"| {title} ({q}, n={ours[key]['n']}) | {target[0] if q == 'p50' else ''} | {a} ms | "
                         f"{b} ms | {_ratio(a, b)} | {verdict(ok)} |")
    if "stored_ms" in ours:  # RUN_STARTED goes out before the writes (agents/agui/endpoint.py early_start)
        lines.append(f"| POST → MESSAGES_SNAPSHOT, the run stored and announced (p50 / p95, n={ours['stored_ms']['n']}) "
                     f"| (for comparison) | {ours['stored_ms'].get('p50')} / {ours['stored_ms'].get('p95')} ms | — | — | — |")
    a, b = ours["floor_404_ms"].get("p50"), peer["floor_404_ms"].get("p50")
    lines.append(f"| a 404 (no database: the server and the framework alone) (p50, n={ours['floor_404_ms']['n']}) | "
                 f"(for comparison) | {a} ms | {b} ms | {_ratio(a, b)} | — |")
    for key, title in (("cpu_us_per_token", "CPU per streamed token (the 2,000-word answers)"),
                       ("cpu_us_per_resume", "CPU per AG-UI resume (to the run's end)")):
        a, b = sum(ours[key].values()), sum(peer[key].values())
        lines.append(f"| {title} | reported | {_cpu(ours[key])} | {_cpu(peer[key])} | {_ratio(a, b)} | — |")
    return lines


# issue 16's targets for the side-by-side figures: (text, check(ours p50, peer p50))
PEER_TARGETS = (
    ("first_event_ms", "POST /agui/banking/ → RUN_STARTED",
     ("≤ 3 ms and ≤ 3× the peer", lambda a, b: a <= 3 and a <= 3 * b)),
    ("resume_to_result_ms", "AG-UI resume sent → TOOL_CALL_RESULT",
     ("≤ 10 ms and ≤ 4× the peer", lambda a, b: a <= 10 and a <= 4 * b)),
    ("answer_2000_words_ms", "a 2,000-word answer, POST → RUN_FINISHED",
     ("≤ 0.15× the peer", lambda a, b: a <= 0.15 * b)),
)


def table(results: dict) -> str:
    m = results["machine"]
    lines = [
        f"Machine: {m['nproc']} × {m['cpu']}, {m['ram_gib']} GiB RAM; {m['db']}; Redis {m['redis']}"
        f"{' (embedded)' if m['embedded_redis'] else ''}; {m['worker']}; Python {m['python']}; "
        f"load average {results['load_before']} before, {results['load_after']} after"
        f"{' (--quick)' if results['quick'] else ''}; WebSocket client: {results.get('ws_client', 'lean')}.",
        "",
        "| figure | target | p50 | p95 | n / detail | verdict |",
        "|---|---|---|---|---|---|",
    ]
    s = results["scenarios"]
    if "decisions" in s:
        d = s["decisions"]["after_api_return_ms"]
        lines.append(f"| 1. decision → TOOL_CALL_RESULT on the thread WebSocket (after the decide API returned) | "
                     f"{TARGETS['decision_resume']} | {d['p50']} ms | {d['p95']} ms | {d['n']} decisions; from the "
                     f"call: p50 {s['decisions']['from_api_call_ms']['p50']} ms | "
                     f"{verdict(d['p50'] <= 25 and d['p95'] <= 60)} |")
        lines.append(f"| 1. … worker CPU per decision (whole resumed run; Daphne: decide API, a GET, a WebSocket) | "
                     f"reported | {_cpu(s['decisions']['cpu_us_per_decision'])} | | {d['n'] + 3} decisions | — |")
    if "streaming" in s:
        for transport in ("sse", "ws"):
            st = s["streaming"][transport]
            rate, added = st["chunks_per_s"], st["added_ms_per_chunk"]
            lines.append(f"| 2. streaming over {transport.upper()}, model flat out: chunks/s end to end | ≥ 5,000 /s | "
                         f"{rate['p50']:.0f} /s | (min {rate['min']:.0f} /s) | {rate['n']} runs × 2,000 chunks, "
                         f"{st['client_text_events']['p50']:.0f} client events per run | {verdict(rate['min'] >= 5000)} |")
            lines.append(f"| 2. … the same: model chunk → client event (includes queueing) | (≤ 2 ms at p50) | "
                         f"{added['p50']} ms | {added['p95']} ms | {added['n']} chunks | — |")
            lines.append(f"| 2. … CPU per streamed token over {transport.upper()} | reported | "
                         f"{_cpu(st['cpu_us_per_token'])} | | {rate['n']} runs × 2,000 "
                         f"tokens | — |")
        for transport in ("sse paced", "ws paced"):
            st = s["streaming"].get(transport)
            if st:
                added = st["added_ms_per_chunk"]
                lines.append(f"| 2. streaming over {transport.split()[0].upper()}, model paced at {PACED_RATE}/s: "
                             f"model chunk → client event | ≤ 2 ms at p50 | {added['p50']} ms | {added['p95']} ms | "
                             f"{added['n']} chunks, {st['client_text_events']['p50']:.0f} client events per run | "
                             f"{verdict(added['p50'] <= 2)} |")
    if "ttfe" in s:
        t = s["ttfe"]["first_event_ms"]
        floor = s["ttfe"]["floor_404_ms"]
        lines.append(f"| 3. POST /agui/banking/ → RUN_STARTED | {TARGETS['ttfe']} | {t['p50']} ms | {t['p95']} ms | "
                     f"{t['n']} runs; floor (a 404, no database): p50 {floor['p50']} ms | {verdict(t['p50'] <= 30)} |")
    if "paused" in s:
        p = s["paused"]
        busy = (p["busy_slots"]["active"] or 0) + (p["busy_slots"]["reserved"] or 0)
        ok = busy == 0 and abs(p["worker_rss_growth_pct"]) <= 10 and abs(p["daphne_rss_growth_pct"]) <= 10
        lines.append(f"| 4. {p['interrupted_runs']} paused runs: busy worker slots; RSS vs idle | {TARGETS['paused']} | "
                     f"{busy} busy | worker {p['memory_idle']['worker']['rss_mib']} → "
                     f"{p['memory_paused']['worker']['rss_mib']} MiB ({p['worker_rss_growth_pct']:+} %), Daphne "
                     f"{p['memory_idle']['daphne']['rss_mib']} → {p['memory_paused']['daphne']['rss_mib']} MiB "
                     f"({p['daphne_rss_growth_pct']:+} %) | {p['interrupted_runs'] - p['cloned']} paused through "
                     f"the worker, {p['cloned']} copies of their rows | {verdict(ok)} |")
    if "inbox" in s:
        i = s["inbox"]
        for name, fig in i["server"].items():
            pending = "status=pending" in name
            target = TARGETS["inbox"] if pending else "(for comparison)"
            ms = fig["server_ms"]
            http = i["http_ms"].get(name, {})
            lines.append(f"| 5. {i['seeded']['total']} requests ({i['seeded']['pending']} pending): {name}, server time | "
                         f"{target} | {ms['p50']} ms | {ms['p95']} ms | {ms['n']} renderings, {fig['queries']} SQL "
                         f"({fig['sql_ms']} ms); over HTTP p50 {http.get('p50')} / p95 {http.get('p95')} ms | "
                         f"{verdict(ms['p95'] <= 50 if pending else None)} |")
        api = i["http_ms"].get("finn /api/approvals/?status=pending&tool=transfer_money")
        if api:
            lines.append(f"| 5. … GET /api/approvals/?status=pending&tool=transfer_money (finn), over HTTP | "
                         f"(for comparison) | {api['p50']} ms | {api['p95']} ms | {api['n']} requests | — |")
    if "fanout" in s:
        f = s["fanout"]
        ok = f["clients_with_every_event_in_order"] == f["clients"] and f["delivery_ms"]["p95"] <= 50
        lines.append(f"| 6. fan-out: {f['clients']} WebSocket clients on one thread, emit → receipt | "
                     f"{TARGETS['fanout']} | {f['delivery_ms']['p50']} ms | {f['delivery_ms']['p95']} ms | "
                     f"{f['clients_with_every_event_in_order']}/{f['clients']} clients got all {f['events_per_client']} "
                     f"events of {f.get('runs', 1)} runs in order ({f['connect_failures']} failed connects, all connected in "
                     f"{f['connect_all_s']} s), in {f['frames']} frames; CPU per event delivered: Daphne "
                     f"{f['cpu_us_per_event']['web']} µs, the clients {f['cpu_us_per_event']['clients']} µs | {verdict(ok)} |")
    if "mcp" in s:
        for key, label in (("work_0ms", "a tool that takes no time"), ("work_10ms", "a tool busy for 10 ms")):
            m = s["mcp"][key]
            a = m["added_ms"]
            lines.append(f"| 7. a listed MCP tool call (stdio), {label}: added over its own time (validation, "
                         f"policy, client, JSON-RPC) | {TARGETS['mcp']} | {a['p50']} ms | {a['p95']} ms | {a['n']} "
                         f"calls; own p50 {m['own_ms']['p50']} ms; validation + policy p50 "
                         f"{m['validate_and_policy_ms']['p50']} ms | {verdict(a['p50'] <= 5)} |")
    if "model" in s:
        for size, m in s["model"]["sizes"].items():
            a, b = m["ours"]["wall_ms"], m["sdk"]["wall_ms"]
            lines.append(f"| 8. a model call to its first delta, {size} messages: ours / the SDK's create() | "
                         f"reported | {a['p50']} / {b['p50']} ms | {a['p95']} / {b['p95']} ms | {m['ours']['n']} calls "
                         f"each; CPU p50 {m['ours']['cpu_ms']['p50']} / {m['sdk']['cpu_ms']['p50']} ms | — |")
    if "peer" in s:
        lines += peer_table(s["peer"])
    return "\n".join(lines)


# ---------------------------------------------------------------- main

async def run_all(stack: Stack, cfg, only, profile) -> dict:
    c = Client(stack)
    await c.setup()
    # warm up: imports, connections, the first runs of each process
    for _ in range(3):
        thread_id = await c.new_thread()
        await c.wait_run(await c.post_message(thread_id, "hello"))
    profiles = Profiles(stack, profile)
    results = {}
    runners = {
        "ttfe": lambda: bench_ttfe(c, cfg),
        "streaming": lambda: bench_streaming(c, stack, cfg),
        "peer": lambda: bench_peer(c, stack, cfg),
        "decisions": lambda: bench_decisions(c, stack, cfg),
        "paused": lambda: bench_paused(c, stack, cfg),
        "fanout": lambda: bench_fanout(c, stack, cfg),
        "inbox": lambda: bench_inbox(c, stack, cfg),
        "mcp": lambda: bench_mcp(c, stack, cfg),
        "model": lambda: bench_model(c, stack, cfg),
    }
    try:
        for name in SCENARIOS:
            if name not in only:
                continue
            log(f"{name} ...")
            t0 = time.perf_counter()
            profiles.start(name)
            try:
                results[name] = await runners[name]()
            finally:
                profiles.stop()
            results[name]["seconds"] = round(time.perf_counter() - t0, 1)
            log(f"{name}: done in {results[name]['seconds']} s")
    finally:
        await c.close()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and rows (about 2 minutes)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated: " + ",".join(SCENARIOS))
    parser.add_argument("--profile", default="", help="py-spy record these scenarios into var/bench-profiles/")
    parser.add_argument("--pool", default="prefork", help="Celery pool (default prefork)")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2, help="Celery worker slots (default nproc)")
    parser.add_argument("--no-peer", dest="peer", action="store_false",
                        help="do not start the peer (Microsoft Agent Framework's AG-UI server from .venv-maf)")
    parser.add_argument("--ws-client", choices=["lean", "websockets"], default="lean",
                        help="the WebSocket client: bench/rawws.py (default) or the websockets library")
    parser.add_argument("--scale", action="store_true",
                        help="scale-out instead: 1 web + 1 worker, then 2 + 2, on PostgreSQL (bench/scale.py)")
    args = parser.parse_args(argv)
    WS_CLIENT["library"] = args.ws_client
    if args.scale:
        import scale

        return scale.main(args)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s) {sorted(unknown)}")
    cfg = QUICK if args.quick else FULL
    started = time.perf_counter()
    load_before = os.getloadavg()
    stack = Stack(args)
    try:
        log(f"starting the stack (logs in {LOG_DIR})")
        stack.start()
        log(f"stack up at {stack.url}: {stack.machine}")
        scenarios = asyncio.run(run_all(stack, cfg, only, {p.strip() for p in args.profile.split(",") if p.strip()}))
    except BaseException:
        for child in stack.children:
            if child.log_path:
                print(f"----- {child.name} (last lines) -----\n{child.tail(30)}", file=sys.stderr)
        raise
    finally:
        stack.stop()
    results = {
        "quick": args.quick, "ws_client": args.ws_client, "config": cfg, "machine": stack.machine,
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(time.perf_counter() - started, 1), "scenarios": scenarios,
        "finished_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    RESULTS.write_text(json.dumps(results, indent=2))
    print()
    print(table(results))
    print(f"\n{RESULTS.relative_to(ROOT)} written; {results['seconds']} s in all.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
