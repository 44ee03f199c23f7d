"""A database taken from a demo into production keeps its demo accounts on the password the README
publishes, one of them a superuser: with DEBUG off, `migrate` and `check --database default` say so
(agui.W005), naming the accounts, without writing to them."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.checks import run_checks
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def warnings(databases=("default",)):
    return [m for m in run_checks(databases=list(databases) if databases else None) if m.id == "agui.W005"]


@pytest.fixture
def production(settings, demo):
    settings.DEBUG = False
    return settings


def test_demo_accounts_on_the_published_password_are_named(production):
    [warning] = warnings()
    assert "agui-demo" in warning.msg and "the README publishes" in warning.msg
    assert "admin (a superuser), alice, bob, rita, finn" in warning.msg
    assert "changepassword" in warning.hint and "createsuperuser" in warning.hint


def test_an_account_with_a_password_of_its_own_or_switched_off_is_not_named(production, demo):
    demo["admin"].set_password("a long one of the admin's own")
    demo["admin"].save()
    User.objects.filter(username="bob").update(is_active=False)
    before = dict(User.objects.values_list("username", "password"))
    [warning] = warnings()
    assert warning.msg.endswith(": alice, rita, finn.")
    assert dict(User.objects.values_list("username", "password")) == before  # read, never re-hashed


def test_a_demo_password_set_in_the_environment_is_asked_too(production, demo):
    production.DEMO_PASSWORD = "the team's demo"
    demo["finn"].set_password("the team's demo")
    demo["finn"].save()
    by_words = {w.msg.split(":")[0]: w.msg.split(": ")[1] for w in warnings()}
    assert by_words == {
        "These accounts sign in with the password the README publishes for the demo (agui-demo)":
            "admin (a superuser), alice, bob, rita.",
        "These accounts sign in with the demo's password (DEMO_PASSWORD)": "finn."}


def test_nothing_is_said_with_debug_on_or_asked_without_a_database(production, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert warnings(databases=None) == []
    production.DEBUG = True
    with django_assert_num_queries(0):
        assert warnings() == []


def test_migrate_says_it(production):
    out, err = io.StringIO(), io.StringIO()
    call_command("migrate", "--noinput", skip_checks=False, stdout=out, stderr=err)
    assert "agui.W005" in out.getvalue() + err.getvalue()
    err = io.StringIO()
    call_command("check", "--database", "default", stdout=io.StringIO(), stderr=err)
    assert "agui.W005" in err.getvalue()


def test_migrate_with_debug_off_creates_a_new_database(tmp_path):
    """The first `migrate` of a production database runs the checks before any table exists."""
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "s" * 50, "DJANGO_ALLOWED_HOSTS": "localhost",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'new.sqlite3'}"}
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "agui.W005" not in done.stdout + done.stderr  # no accounts yet, so none on the demo password
    assert "Applying auth.0001_initial... OK" in done.stdout
