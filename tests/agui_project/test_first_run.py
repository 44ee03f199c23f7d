"""A first `make run`: a quiet console (one warning per fact, no ERROR during its own start-up wait,
no routine Celery lines), LOG_LEVEL to get the routine lines back, and a Makefile that installs the
product alone for `make run` and the dev tools for the test targets."""

import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from agui_project.logs import RoutineLines
from scripts import devstack

ROOT = Path(__file__).resolve().parents[2]
ROUTINE = re.compile(r"Sending due task|\] received$| succeeded in ")


def record(name, msg, level=logging.INFO, args=()):
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_routine_celery_lines_are_filtered_and_everything_else_kept():
    f = RoutineLines()
    from celery.app import trace

    assert not f.filter(record("celery.beat", "Scheduler: Sending due task %s (%s)", args=("a", "b")))
    assert not f.filter(record("celery.worker.strategy", "Task %(name)s[%(id)s] received"))
    assert not f.filter(record("celery.app.trace", trace.LOG_SUCCESS))
    assert f.filter(record("celery.app.trace", trace.LOG_RETRY))  # a retry says something
    assert f.filter(record("celery.app.trace", trace.LOG_FAILURE, level=logging.ERROR))
    assert f.filter(record("celery.beat", "Message Error: %s", level=logging.ERROR))
    assert f.filter(record("agents.services", "run %s: its client went away"))


def test_logging_config_quiets_the_routine_loggers_unless_log_level_is_debug():
    assert settings.LOG_LEVEL == "INFO" and settings.LOGGING["root"]["level"] == "INFO"
    for name in ("celery.beat", "celery.worker.strategy", "celery.app.trace"):
        assert settings.LOGGING["loggers"][name]["filters"] == ["routine"]
    out = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings as s; print(s.LOG_LEVEL, "
         "s.LOGGING['root']['level'], s.LOGGING['loggers']['celery.beat']['filters'])"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "agui_project.settings", "LOG_LEVEL": "debug"},
        cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "DEBUG DEBUG []"
    bad = subprocess.run([sys.executable, "-c", "import django.conf as c; c.settings.LOG_LEVEL"],
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "agui_project.settings", "LOG_LEVEL": "loud"},
                         cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and "LOG_LEVEL='LOUD' is not a level" in bad.stderr


def test_celery_banners_only_at_debug():
    quiet = dict(devstack.stack_commands("127.0.0.1", "1", "b", "solo", "1", log_level="INFO"))
    loud = dict(devstack.stack_commands("127.0.0.1", "1", "b", "solo", "1", log_level="DEBUG"))
    assert "--quiet" in quiet["worker"] and "--quiet" in quiet["beat"]
    assert quiet["worker"][quiet["worker"].index("-l") + 1] == "INFO"
    assert "--quiet" not in loud["worker"] and loud["beat"][loud["beat"].index("-l") + 1] == "DEBUG"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_installs_the_product_alone_and_make_test_adds_the_dev_tools(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / ".venv").mkdir()
    for other in ("tests/agui_client/package.json", "tests/agui_client/package-lock.json",
                  "tests/mcp_fs/package.json", "tests/mcp_fs/package-lock.json",
                  "tests/maf_client/requirements.txt"):  # `make test`'s other prerequisites
        (tmp_path / other).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / other).write_text("")

    def plan(target):
        return subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True,
                              check=True).stdout

    run = plan("run")
    assert "pip install -e . " in run and "[dev]" not in run
    (tmp_path / ".venv" / ".installed").touch()  # what that `make run` leaves
    for target in ("test", "e2e", "lint"):
        assert "pip install -e '.[dev]'" in plan(target), target
    (tmp_path / ".venv" / ".dev-installed").touch()
    assert ".venv/bin/pip install" not in plan("test")
    assert ".venv/bin/pip install" not in plan("run")


@pytest.mark.slow
def test_make_run_start_up_console_is_quiet(tmp_path):
    """scripts/run.py (what `make run` runs) on a free port, a fresh database and its own Redis:
    from the first line until a few beat periods after its banner."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SECRET_KEY", "DJANGO_DEBUG", "LOG_LEVEL",
                        "OPENAI_API_KEY", "DJANGO_SETTINGS_MODULE", "AGUI_SECRET_KEY_WARNED")}
    env.update(AGUI_VAR_DIR=str(tmp_path), PORT=str(devstack.free_port()), CELERY_CONCURRENCY="1",
               PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "scripts/run.py"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines, banner = [], threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "agui-inbox is running at" in line:
                banner.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert banner.wait(120), "no banner:\n" + "\n".join(lines)
        time.sleep(6)  # three periods of the 2 s beat schedule: what it would print, it has printed
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        rc = proc.wait(30)
        reader.join(10)
    text = "\n".join(lines)
    assert rc == 0, text
    assert text.count("development SECRET_KEY in use") == 1, text
    assert not [line for line in lines if re.search(r"\bERROR\b|Service Unavailable|Traceback", line)], text
    assert not [line for line in lines if ROUTINE.search(line)], text
    assert "Applying " not in text and "[tasks]" not in text, text  # migrations and Celery's banner
    assert "celery@" in text and " ready." in text  # the worker still says it is ready


def readme():
    return (ROOT / "README.md").read_text()


@pytest.mark.django_db
def test_each_demo_user_lands_where_the_readme_says(client, demo):
    table = readme().split("| user  | who | where they go |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:4] for line in table.splitlines()[2:]]
    assert rows, table
    for users, _who, where in rows:
        expected = re.search(r"`(/[^`]*)`", where).group(1)
        for name in re.split(r",\s*", users.strip()):
            client.force_login(demo[name])
            assert client.get("/").url == expected, (name, expected)


def test_readme_defaults_match_the_settings():
    for name, value in (("AGUI_DEFAULT_APPROVAL_TIMEOUT", settings.AGUI_DEFAULT_APPROVAL_TIMEOUT),
                        ("LOG_LEVEL", settings.LOG_LEVEL)):
        row = next(line for line in readme().splitlines() if line.startswith(f"| `{name}` |"))
        assert row.split("|")[2].strip().startswith(f"`{value}`"), row
