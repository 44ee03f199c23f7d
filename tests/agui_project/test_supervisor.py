"""`make run`'s supervisor (scripts/run.py): a child that dies is started again after a backoff,
with a log line; one that keeps dying is given up on. Real child processes (tiny Python
commands), a hand-driven clock for the backoff, so nothing here waits for a timer."""

import os
import sys
import time

import pytest

from scripts import devstack, run

CRASH = [sys.executable, "-c", "import sys; sys.exit(3)"]
STEADY = [sys.executable, "-c", "import time; time.sleep(120)"]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def wait_until(check, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def gone(pid):
    """Exited (a zombie waiting for init to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.fixture
def supervise(tmp_path):
    made = []

    def make(commands, **kwargs):
        lines = []
        spawn = lambda name, cmd, env: devstack.spawn(name, cmd, env=env, log_path=tmp_path / f"{name}.log")  # noqa: E731
        sup = run.Supervisor(commands, dict(os.environ), spawn=spawn, log=lines.append, **kwargs)
        made.append(sup)
        return sup, lines

    yield make
    for sup in made:
        sup.stop(timeout=5)


def test_a_child_that_dies_is_restarted_with_backoff_and_given_up_on_after_repeated_failures(supervise):
    clock = Clock()
    sup, lines = supervise([("worker", CRASH), ("web", STEADY)], clock=clock, backoff=1.0, backoff_max=30.0,
                           burst=3, window=60.0)
    sup.start()
    web_pid = sup.children["web"].proc.pid

    for exit_no, delay in ((1, 1), (2, 2)):
        first = sup.children["worker"]
        wait_until(first.proc.poll, what="the worker to exit")
        assert sup.poll() is True
        assert lines[-1] == (f"worker exited with code 3; restarting in {delay} s "
                             f"(exit {exit_no} of 3 allowed within 60 s)")
        assert sup.poll() is True and sup.children["worker"] is first  # not before its backoff is over
        clock.now += delay - 0.01
        assert sup.poll() is True and sup.children["worker"] is first
        clock.now += 0.01
        assert sup.poll() is True
        assert sup.children["worker"] is not first
        assert lines[-1] == f"worker restarted (pid {sup.children['worker'].proc.pid})"

    third = sup.children["worker"]
    wait_until(lambda: not third.alive(), what="the worker to exit again")
    assert sup.poll() is False  # the third exit within the window: stop everything
    assert sup.gave_up == lines[-1] == "worker exited 3 times within 60 s (last code 3); giving up"
    assert sup.children["web"].proc.pid == web_pid and sup.children["web"].alive()  # never touched

    sup.stop(timeout=5)
    assert not sup.children["web"].alive()


def test_exits_far_apart_never_add_up_to_giving_up(supervise):
    clock = Clock()
    sup, lines = supervise([("beat", CRASH)], clock=clock, backoff=1.0, burst=2, window=10.0)
    sup.start()
    for _ in range(4):
        child = sup.children["beat"]
        wait_until(child.proc.poll, what="beat to exit")
        assert sup.poll() is True
        assert lines[-1].endswith("restarting in 1 s (exit 1 of 2 allowed within 10 s)")  # backoff back at 1 s
        clock.now += 11  # longer than the window since the last exit
        assert sup.poll() is True and sup.children["beat"] is not child


def test_what_a_dead_child_forked_goes_with_it(supervise, tmp_path):
    """A worker's leader dying must not leave its pool processes running next to its successor."""
    pid_file = tmp_path / "grandchild.pid"
    forks_then_dies = [sys.executable, "-c", (
        "import subprocess, sys; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); sys.exit(1)")]
    clock = Clock()
    sup, lines = supervise([("worker", forks_then_dies)], clock=clock, burst=5)
    sup.start()
    child = sup.children["worker"]
    wait_until(lambda: not child.alive() and pid_file.exists() and pid_file.read_text(), what="the fork")
    grandchild = int(pid_file.read_text())
    assert not gone(grandchild)
    assert sup.poll() is True
    wait_until(lambda: gone(grandchild), what="the orphaned pool process to be stopped")


def test_a_port_in_use_or_not_a_port_stops_make_run_before_anything_starts(tmp_path):
    import socket
    import subprocess

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        assert "already in use" in run.port_problem("127.0.0.1", port)
        # the whole command: it says so at once, before migrating or starting a child (it used to
        # restart Daphne five times, polling whatever held the port, for ~30 s)
        env = {**os.environ, "PORT": port, "AGUI_VAR_DIR": str(tmp_path), "REDIS_URL": "redis://127.0.0.1:1/0"}
        out = subprocess.run([sys.executable, "scripts/run.py"], cwd=devstack.ROOT, env=env, capture_output=True,
                             text=True, timeout=60)
    assert out.returncode == 1
    assert f"127.0.0.1:{port} is already in use" in out.stdout and "[web]" not in out.stdout
    assert not (tmp_path / "db.sqlite3").exists()
    assert "is not a port number" in run.port_problem("127.0.0.1", "eighty")
    assert "is not a port number" in run.port_problem("127.0.0.1", "70000")
    assert run.port_problem("127.0.0.1", port) is None  # free again once its holder went


def test_make_runs_mail_links_lead_to_its_own_port_unless_the_public_url_is_set():
    """`PORT=8047 make run` mailed links to http://localhost:8000 (the setting's default)."""
    assert run.child_env({"PORT": "8047"}, "http://127.0.0.1:8047")["AGUI_PUBLIC_URL"] == "http://127.0.0.1:8047"
    assert run.child_env({"AGUI_PUBLIC_URL": ""}, "http://127.0.0.1:8047")["AGUI_PUBLIC_URL"] == "http://127.0.0.1:8047"
    chosen = {"AGUI_PUBLIC_URL": "https://inbox.example.com"}
    assert run.child_env(chosen, "http://127.0.0.1:8047")["AGUI_PUBLIC_URL"] == "https://inbox.example.com"
