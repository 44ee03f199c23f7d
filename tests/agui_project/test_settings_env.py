"""Settings refuse a bad value at start, naming the variable (every number goes through env_int / env_float)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
while not (ROOT / "manage.py").exists():  # wherever this file sits under tests/
    ROOT = ROOT.parent


def run_django(code, cwd=ROOT, **env):
    """`code` in a fresh process (settings are read from the environment at start)."""
    full = {**os.environ, "DJANGO_SETTINGS_MODULE": "agui_project.settings", "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name,value,says", [
    ("AGUI_MAX_TURNS", "eight", "AGUI_MAX_TURNS='eight' is not an integer"),
    ("AGUI_STREAM_MAXLEN", "20k", "AGUI_STREAM_MAXLEN='20k' is not an integer"),
    ("AGUI_DEFAULT_APPROVAL_TIMEOUT", "1h", "AGUI_DEFAULT_APPROVAL_TIMEOUT='1h' is not an integer"),
    ("AGUI_MODEL_TIMEOUT", "a minute", "AGUI_MODEL_TIMEOUT='a minute' is not a number"),
    ("AGUI_TOOL_LEASE_SECONDS", "nan", "AGUI_TOOL_LEASE_SECONDS='nan' is not a finite number"),
    ("AGUI_STATE_DELTA_INTERVAL", "inf", "AGUI_STATE_DELTA_INTERVAL='inf' is not a finite number"),
    # out of range: each was taken and broke the product at run time (a zero lease let recovery take
    # a call that was running, before its worker had written the lease)
    ("AGUI_TOOL_LEASE_SECONDS", "0", "AGUI_TOOL_LEASE_SECONDS='0' must be at least 1"),
    ("AGUI_MAX_TURNS", "0", "AGUI_MAX_TURNS='0' must be at least 1"),  # no run ever asked the model
    ("AGUI_MAX_BODY_BYTES", "-1", "AGUI_MAX_BODY_BYTES='-1' must be at least 1"),
    ("AGUI_MODEL_TIMEOUT", "0", "AGUI_MODEL_TIMEOUT='0' must be more than 0"),
    ("AGUI_UNDO_SECONDS", "-5", "AGUI_UNDO_SECONDS='-5' must be at least 0"),
    ("AGUI_SWITCHED_OFF_SWEEP_SECONDS", "-1", "AGUI_SWITCHED_OFF_SWEEP_SECONDS='-1' must be at least 0"),
    ("AGUI_MCP_MAX_TOOLS_PER_AGENT", "200", "AGUI_MCP_MAX_TOOLS_PER_AGENT='200' must be at most 128"),
    ("AGUI_DEFAULT_APPROVAL_TIMEOUT", "99999999", "AGUI_DEFAULT_APPROVAL_TIMEOUT='99999999' must be at most 2592000"),
])
def test_a_bad_number_stops_the_start(name, value, says, tmp_path):
    out = run_django("", **{name: value}, AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr and says in out.stderr
    assert "hunter2" not in out.stderr  # a database URL's password is not repeated


def test_the_ends_of_the_ranges_and_their_meanings_are_taken(tmp_path):
    out = run_django("from django.conf import settings as s; print(s.AGUI_UNDO_SECONDS, s.AGUI_TOKEN_TTL_SECONDS, "
                     "s.AGUI_ABANDONED_RUN_GRACE_SECONDS, s.AGUI_TOOL_LEASE_SECONDS, s.AGUI_MCP_MAX_TOOLS_PER_AGENT)",
                     AGUI_UNDO_SECONDS="0", AGUI_TOKEN_TTL_SECONDS="0", AGUI_ABANDONED_RUN_GRACE_SECONDS="-1",
                     AGUI_TOOL_LEASE_SECONDS="1", AGUI_MCP_MAX_TOOLS_PER_AGENT="128", AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0.0", "0", "-1.0", "1.0", "128"]


def test_numbers_read_from_the_environment(tmp_path):
    out = run_django("from django.conf import settings as s; print(s.AGUI_MAX_TURNS, s.AGUI_MODEL_TIMEOUT, "
                     "s.AGUI_COMMAND_TIMEOUT, s.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'])",
                     AGUI_MAX_TURNS=" 3 ", AGUI_MODEL_TIMEOUT="2.5", AGUI_COMMAND_TIMEOUT="",
                     CELERY_VISIBILITY_TIMEOUT="600", AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["3", "2.5", "5.0", "600"]


@pytest.mark.parametrize("name,value,says", [
    # taken at start and refused only when a person ran a command: the model read the setting's name
    ("AGUI_SANDBOX_BWRAP", "require", "AGUI_SANDBOX_BWRAP='require' is not one of auto, off, required"),
    # every mailed link (the decision links, "Decide: ...") went to an address nobody could open
    ("AGUI_PUBLIC_URL", "inbox.example.com", "AGUI_PUBLIC_URL='inbox.example.com' is not an http:// or https:// address"),
    ("AGUI_PUBLIC_URL", "https://", "AGUI_PUBLIC_URL='https://' is not an http:// or https:// address"),
    ("AGUI_PUBLIC_URL", "https://inbox.example.com/?next=1",
     "AGUI_PUBLIC_URL='https://inbox.example.com/?next=1' is not an http:// or https:// address"),
    # taken, but the site cannot be served under a path (root paths in pages, scripts, sockets, API):
    # the mail links led to the one prefix under which nothing else worked
    ("AGUI_PUBLIC_URL", "https://example.com/approvals/",
     "AGUI_PUBLIC_URL='https://example.com/approvals/' has a path: the site must be served at the root of its host"),
    # each was taken and failed later, elsewhere: a traceback naming MySQLdb, the first event, every
    # request taken for plain HTTP, a sandbox per working directory
    ("DATABASE_URL", "mysql://u:hunter2@db/app", "DATABASE_URL must be a PostgreSQL URL (postgres://"),
    ("DATABASE_URL", "db.sqlite3", "DATABASE_URL must be a PostgreSQL URL (postgres://"),
    ("DATABASE_URL", "postgres://u:hunter2@db:port/app", "DATABASE_URL must be a PostgreSQL URL (postgres://"),
    # in memory (two slashes), or each process's working directory's: a database per process
    ("DATABASE_URL", "sqlite://agui.sqlite3", "or a SQLite file's absolute path (sqlite:////absolute/path.sqlite3)"),
    ("DATABASE_URL", "sqlite:///var/agui.sqlite3", "or a SQLite file's absolute path (sqlite:////absolute/path"),
    ("REDIS_URL", "hunter2@cache://x", "REDIS_URL must be a redis://, rediss:// or unix:// URL (it is not a URL)"),
    ("REDIS_URL", "127.0.0.1:6379", "REDIS_URL must be a redis://, rediss:// or unix:// URL (it is not a URL)"),
    ("AGUI_PROXY_SSL_HEADER", "X Forwarded Proto", "'X Forwarded Proto' is not a header name"),
    ("AGUI_SANDBOX_DIR", "var/sandbox", "AGUI_SANDBOX_DIR='var/sandbox' must be an absolute path"),
])
def test_a_bad_word_or_address_stops_the_start(name, value, says, tmp_path):
    out = run_django("", **{name: value}, AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr and says in out.stderr


def test_words_and_addresses_read_from_the_environment(tmp_path):
    out = run_django("from django.conf import settings as s; print(s.AGUI_SANDBOX_BWRAP, s.AGUI_PUBLIC_URL)",
                     AGUI_SANDBOX_BWRAP=" Required ", AGUI_PUBLIC_URL=" https://example.com:8443/ ",
                     AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["required", "https://example.com:8443/"]


def test_a_blank_host_list_or_secret_key_is_its_default(tmp_path):
    out = run_django("from django.conf import settings as s; print(s.ALLOWED_HOSTS)", DJANGO_ALLOWED_HOSTS=" ")
    assert out.returncode == 0 and out.stdout.strip() == "['localhost', '127.0.0.1', '[::1]']"
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": " ", "AGUI_VAR_DIR": str(tmp_path)})
    assert done.returncode != 0  # one line, as every bad setting: not a traceback
    assert done.stderr.strip() == "configuration error: DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off"
    # what the apps refuse as they load is one line too
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DJANGO_EMAIL_BACKEND": "nosuch", "AGUI_VAR_DIR": str(tmp_path)})
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("configuration error: DJANGO_EMAIL_BACKEND='nosuch' cannot")


def test_a_blank_word_is_its_default(tmp_path):
    """An .env or compose file that lists a variable with nothing after `=`: the From address was empty
    (and check --deploy silent about it), the model unnamed, the data folder the working directory."""
    out = run_django("from django.conf import settings as s; print(repr((s.DEFAULT_FROM_EMAIL, s.AGUI_MODEL, "
                     "s.DEMO_PASSWORD, str(s.VAR_DIR), s.OPENAI_BASE_URL, s.CELERY_BROKER_URL == s.REDIS_URL)))",
                     DJANGO_DEFAULT_FROM_EMAIL=" ", AGUI_MODEL="", DEMO_PASSWORD="  ", AGUI_VAR_DIR=" ",
                     OPENAI_BASE_URL=" ", CELERY_BROKER_URL="   ", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == repr(("agui-inbox <noreply@localhost>", "gpt-4o-mini", "agui-demo", str(ROOT / "var"),
                                       None, True))


@pytest.mark.parametrize("value", ["whsec_@@@", "whsec_", "short", "abc", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                   "whsec_c2hvcnQ="])  # no prefix; five bytes
def test_a_callback_secret_that_cannot_sign_stops_the_start(value, tmp_path):
    """Taken at start, it failed in the worker at every callback delivery (Standard Webhooks reads
    whsec_ and base64); the message names the variable and not the secret."""
    out = run_django("", AGUI_WEBHOOK_CALLBACK_SECRET=value, AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode != 0
    assert "ImproperlyConfigured: AGUI_WEBHOOK_CALLBACK_SECRET is not a signing secret" in out.stderr
    said = out.stderr.replace("AGUI_WEBHOOK_CALLBACK_SECRET", "").replace("whsec_ then base64", "")
    assert value not in said


def test_a_callback_secret_that_signs_is_taken(tmp_path):
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    out = run_django("from django.conf import settings as s; print(s.AGUI_WEBHOOK_CALLBACK_SECRET)",
                     AGUI_WEBHOOK_CALLBACK_SECRET=secret, AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [secret]


@pytest.mark.parametrize("value,entry", [(None, 30.0), ("5", 5.0), ("0", None)])
def test_the_switched_off_accounts_sweep_follows_its_setting(value, entry, tmp_path):
    """agents/account_off.py's sweep: every AGUI_SWITCHED_OFF_SWEEP_SECONDS, none at 0."""
    env = {"AGUI_VAR_DIR": str(tmp_path), **({"AGUI_SWITCHED_OFF_SWEEP_SECONDS": value} if value else {})}
    out = run_django("from django.conf import settings as s\n"
                     "print(s.CELERY_BEAT_SCHEDULE.get('switched-off-accounts', {}).get('schedule'))", **env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(entry)]


def test_manage_py_says_a_bad_setting_in_one_line(tmp_path):
    """Every manage.py command (make run's migrate first) stopped with a 55-line traceback whose last
    line named the variable."""
    env = {**os.environ, "AGUI_UNDO_SECONDS": "-3", "AGUI_VAR_DIR": str(tmp_path), "AGUI_SECRET_KEY_WARNED": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run([sys.executable, "manage.py", "migrate"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip() == "configuration error: AGUI_UNDO_SECONDS='-3' must be at least 0", out.stderr
