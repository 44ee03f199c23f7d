"""`make run`: the whole product on one machine, with nothing installed but Python.

migrate + seed_demo, then a Celery worker, Celery beat and Daphne as child processes (each in
its own process group, output prefixed by name), an embedded Redis if REDIS_URL is unset.
A child that dies is started again after a backoff, as systemd (`Restart=always`) or a process
manager would in production; one that keeps dying (AGUI_RESTART_BURST exits within
AGUI_RESTART_WINDOW seconds) stops everything. The embedded Redis is restarted on its own port.
Ctrl-C or SIGTERM stops everything; nothing is left running.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devstack  # noqa: E402
import messages  # noqa: E402

ROOT = devstack.ROOT
PY = sys.executable


def log(msg: str) -> None:
    with devstack._print_lock:
        print(f"[run] {msg}", flush=True)


class Supervisor:
    """Keeps named child processes running (a small systemd `Restart=always` with a start limit).

    A child that exits for any reason is started again after a backoff that doubles with each
    exit inside the window (`backoff`, 2x, 4x ... up to `backoff_max`), with a log line each time;
    the `burst`-th exit within `window` seconds gives up (poll() returns False), like systemd's
    StartLimitBurst / StartLimitIntervalSec. Why not supervisord or honcho: `make run` must work
    with nothing installed but Python, and either would be one more dependency for ~50 lines.
    """

    def __init__(self, commands, env, *, spawn=devstack.spawn, log=log, backoff=1.0, backoff_max=30.0,
                 burst=5, window=60.0, clock=time.monotonic):
        self.commands = dict(commands)  # name -> argv
        self.env, self._spawn, self._log, self._clock = env, spawn, log, clock
        self.backoff, self.backoff_max, self.burst, self.window = backoff, backoff_max, burst, window
        self.children: dict[str, devstack.Child] = {}
        self.exits: dict[str, list[float]] = {name: [] for name in self.commands}
        self.restart_at: dict[str, float] = {}  # name -> when a dead child is started again
        self.gave_up: str | None = None  # why, once a child failed too often

    def start(self) -> None:
        for name in self.commands:
            self._start(name)

    def _start(self, name: str) -> None:
        self.children[name] = self._spawn(name, self.commands[name], env=self.env)

    def poll(self) -> bool:
        """Restart what died (when its backoff is over); False once a child failed too often."""
        now = self._clock()
        for name, child in list(self.children.items()):
            if name in self.restart_at:
                if now >= self.restart_at[name]:
                    del self.restart_at[name]
                    self._start(name)
                    self._log(f"{name} restarted (pid {self.children[name].proc.pid})")
                continue
            if child.alive():
                continue
            child.signal_group(signal.SIGKILL)  # whatever it forked (a prefork pool) goes with it
            recent = [t for t in self.exits[name] if now - t < self.window] + [now]
            self.exits[name] = recent
            code = child.proc.returncode
            if len(recent) >= self.burst:
                self.gave_up = (f"{name} exited {len(recent)} times within {self.window:.0f} s "
                                f"(last code {code}); giving up")
                self._log(self.gave_up)
                return False
            delay = min(self.backoff * 2 ** (len(recent) - 1), self.backoff_max)
            self.restart_at[name] = now + delay
            self._log(f"{name} exited with code {code}; restarting in {delay:g} s "
                      f"(exit {len(recent)} of {self.burst} allowed within {self.window:.0f} s)")
        return True

    def stop(self, timeout: float = 10.0) -> None:
        if self.children:
            self._log("stopping " + ", ".join(self.children))
            devstack.stop_children(list(self.children.values()), timeout=timeout)


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name) or ""
    try:
        return float(value) if value.strip() else default
    except ValueError:
        raise SystemExit(f"[run] {name}={value!r} is not a number") from None


def port_problem(host: str, port: str) -> str | None:
    """Why Daphne could not listen on host:port, said before anything starts, or None. Found only
    by Daphne, it was five restarts and ~30 s of "still waiting for /healthz" (answered by whatever
    held the port) before `make run` gave up."""
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"PORT={port!r} is not a port number (1-65535)"
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"HOST={host!r} is not an address of this machine ({exc.strerror})"
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Twisted listens: TIME_WAIT is no obstacle
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"{host}:{port} is already in use by another program: stop it, or set PORT (e.g. PORT=8001 make run)"
            return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None


def manage(env: dict, *args: str) -> None:
    """Run a manage.py command in the foreground; stop loudly if it fails."""
    log("python manage.py " + " ".join(args))
    rc = subprocess.call([PY, "manage.py", *args], cwd=ROOT, env=env)
    if rc != 0:
        raise SystemExit(f"[run] manage.py {args[0]} failed (exit {rc})")


def child_env(environ, url: str) -> dict:
    """The children's environment: this one, with the links in mail leading to this stack (the
    settings' default names port 8000, whatever PORT said) unless AGUI_PUBLIC_URL is set."""
    env = dict(environ)
    if not env.get("AGUI_PUBLIC_URL"):
        env["AGUI_PUBLIC_URL"] = url
    return env


def banner(url: str) -> str:
    pw = os.environ.get("DEMO_PASSWORD") or "agui-demo"
    model = ("OFFLINE scripted demo model (OPENAI_API_KEY is unset)"
             if not os.environ.get("OPENAI_API_KEY")
             else f"OpenAI-compatible model {os.environ.get('AGUI_MODEL', '(default)')}"
                  f" at {os.environ.get('OPENAI_BASE_URL', 'api.openai.com')}")
    return "\n".join([
        "",
        "=" * 64,
        f"  agui-inbox is running at {url}/",
        f"  log in (password: {pw}):",
        "    admin          - administrator (every request, tool policies, Django admin)",
        "    alice, bob     - end users (chat with agents)",
        "    rita           - reviewers + support (approval inbox; the support agent's refunds)",
        "    finn           - finance + reviewers (approval inbox; transfers)",
        f"  model: {model}",
        "  Ctrl-C stops everything.",
        "=" * 64,
        "",
    ])


def main() -> int:
    os.chdir(ROOT)
    var = Path(os.environ.get("AGUI_VAR_DIR") or ROOT / "var")  # settings.VAR_DIR
    var.mkdir(parents=True, exist_ok=True)
    host = os.environ.get("HOST") or "127.0.0.1"
    port = (os.environ.get("PORT") or "8000").strip()
    problem = port_problem(host, port)
    if problem:
        log(problem)
        return 1
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    env = child_env(os.environ, url)
    if not env.get("DJANGO_SECRET_KEY"):  # settings.py's rule; said here once, not by each child
        log("WARNING: development SECRET_KEY in use (set DJANGO_SECRET_KEY in production)")
        env["AGUI_SECRET_KEY_WARNED"] = "1"

    stop = threading.Event()

    def on_signal(_signum, _frame):
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    redis = None
    supervisor = None
    failed = False
    try:
        if not env.get("REDIS_URL"):
            redis = devstack.start_embedded_redis()
            env["REDIS_URL"] = redis.url
            log(f"embedded Redis at {redis.url} (set REDIS_URL to use your own)")
        if messages.compile_messages():  # the translations' .mo files (build output)
            log("translations compiled")
        manage(env, "migrate", "--noinput", "--verbosity", "0")  # a first run's 40 "Applying ..." lines say nothing
        manage(env, "seed_demo")
        if stop.is_set():
            return 0

        supervisor = Supervisor(
            devstack.stack_commands(host, port, str(var / "celerybeat-schedule"),
                                    os.environ.get("CELERY_POOL") or "prefork",
                                    os.environ.get("CELERY_CONCURRENCY") or "4"),
            env, burst=int(_env_float("AGUI_RESTART_BURST", 5)), window=_env_float("AGUI_RESTART_WINDOW", 60.0))
        supervisor.start()

        started, ready, next_note = time.monotonic(), False, 10.0
        while not stop.is_set():
            if redis and not redis.alive():
                log(f"embedded Redis exited (code {redis.proc.returncode}); starting it again on port {redis.port}")
                redis.stop()  # its files
                redis = devstack.start_embedded_redis(port=redis.port)
            if not supervisor.poll():
                failed = True
                break
            if not ready:
                # the whole stack: the banner promises a worker too (plain /healthz is the load balancer's)
                status, _ = devstack.http_status(url + "/healthz?require=worker", timeout=3.0)
                waited = time.monotonic() - started
                if status == 200:
                    ready = True
                    print(banner(url), flush=True)
                elif waited > 60:
                    log(f"{url}/healthz did not answer 200 within 60 s (last: {status}); stopping")
                    failed = True
                    break
                elif waited > next_note:
                    log(f"still waiting for {url}/healthz ({waited:.0f} s, last: {status})")
                    next_note += 10
            stop.wait(0.25 if not ready else 0.5)
    finally:
        if supervisor:
            supervisor.stop(timeout=10)
        if redis:
            redis.stop()
    return 1 if failed else 0  # a requested stop (Ctrl-C, SIGTERM) is a clean exit


if __name__ == "__main__":
    sys.exit(main())
