"""`make run`: the whole product on one machine, with nothing installed but Python.

migrate + seed_demo, then a Celery worker, Celery beat and Daphne as child processes (each in
its own process group, output prefixed by name), an embedded Redis if REDIS_URL is unset.
Ctrl-C, SIGTERM or any child dying stops everything; nothing is left running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import devstack  # noqa: E402

ROOT = devstack.ROOT
PY = sys.executable


def log(msg: str) -> None:
    with devstack._print_lock:
        print(f"[run] {msg}", flush=True)


def manage(env: dict, *args: str) -> None:
    """Run a manage.py command in the foreground; stop loudly if it fails."""
    log("python manage.py " + " ".join(args))
    rc = subprocess.call([PY, "manage.py", *args], cwd=ROOT, env=env)
    if rc != 0:
        raise SystemExit(f"[run] manage.py {args[0]} failed (exit {rc})")


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
        "    admin          - admin (tool policies, Django admin)",
        "    alice, bob     - end users (chat with agents)",
        "    rita           - reviewers (approval inbox)",
        "    finn           - finance + reviewers",
        f"  model: {model}",
        "  Ctrl-C stops everything.",
        "=" * 64,
        "",
    ])


def main() -> int:
    os.chdir(ROOT)
    (ROOT / "var").mkdir(exist_ok=True)
    host = os.environ.get("HOST") or "127.0.0.1"
    port = os.environ.get("PORT") or "8000"
    env = dict(os.environ)

    stop = threading.Event()

    def on_signal(_signum, _frame):
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    redis = None
    children: list[devstack.Child] = []
    failed = False
    try:
        if not env.get("REDIS_URL"):
            redis = devstack.start_embedded_redis()
            env["REDIS_URL"] = redis.url
            log(f"embedded Redis at {redis.url} (set REDIS_URL to use your own)")
        manage(env, "migrate", "--noinput")
        manage(env, "seed_demo")
        if stop.is_set():
            return 0

        for name, cmd in devstack.stack_commands(host, port, "var/celerybeat-schedule",
                                        os.environ.get("CELERY_POOL") or "prefork",
                                        os.environ.get("CELERY_CONCURRENCY") or "4"):
            children.append(devstack.spawn(name, cmd, env=env))

        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
        started, ready, next_note = time.monotonic(), False, 10.0
        while not stop.is_set():
            dead = [c for c in children if not c.alive()]
            if dead:
                log(f"{dead[0].name} exited with code {dead[0].proc.returncode}; stopping")
                failed = True
                break
            if not ready:
                status, _ = devstack.http_status(url + "/healthz", timeout=1.0)
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
        if children:
            log("stopping " + ", ".join(c.name for c in children))
            devstack.stop_children(children, timeout=10)
        if redis:
            redis.stop()
    return 1 if failed else 0  # a requested stop (Ctrl-C, SIGTERM) is a clean exit


if __name__ == "__main__":
    sys.exit(main())
