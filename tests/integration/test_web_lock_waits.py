"""A web request waits for a row lock at most AGUI_WEB_LOCK_TIMEOUT (agui_project/handler.py
bound_lock_waits), then is answered 503 database_busy: a decision on a request whose row another
transaction held waited as long as the lock (29 s), and ten such waits held the web process's whole
pool, every other request getting a 503 after 10 s."""

import threading

import httpx
import psycopg
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.authtoken.models import Token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                                 reason="lock_timeout is PostgreSQL's (SQLite's writers wait on its busy timeout)")]
SCHEMA = {"type": "object", "properties": {"email": {"type": "string"}}}


@pytest.fixture
def live_stack_env():
    return {"AGUI_WEB_LOCK_TIMEOUT": "1"}


def _token(name):
    return Token.objects.get_or_create(user=User.objects.get(username=name))[0].key


def test_a_decision_on_a_locked_request_is_answered_busy_and_then_decided(live_stack):
    import os

    call_command("seed_demo", stdout=open(os.devnull, "w"))
    alice = httpx.Client(base_url=live_stack["url"], headers={"Authorization": f"Token {_token('alice')}"}, timeout=30)
    rita = httpx.Client(base_url=live_stack["url"], headers={"Authorization": f"Token {_token('rita')}"}, timeout=30)
    made = alice.post("/api/approvals/", json={"tool_name": "crm.lookup", "arguments": {"email": "a@example.com"},
                                               "schema": SCHEMA})
    assert made.status_code == 201, made.text
    approval = made.json()["id"]

    db = settings.DATABASES["default"]
    locked, release = threading.Event(), threading.Event()

    def hold_the_row():  # another transaction holds the request's row (a long admin edit, a migration)
        with psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"],
                             password=db["PASSWORD"] or None, dbname=db["NAME"]) as other:
            other.execute("SELECT 1 FROM approvals_approvalrequest WHERE id = %s FOR UPDATE", (approval,))
            locked.set()
            release.wait(30)
    holder = threading.Thread(target=hold_the_row)
    holder.start()
    try:
        assert locked.wait(10)
        busy = rita.post(f"/api/approvals/{approval}/decide/", json={"decision": "approve"})
        assert busy.status_code == 503 and busy.json()["code"] == "database_busy", busy.text
        assert alice.get(f"/api/approvals/{approval}/").json()["status"] == "pending"  # reads pass the lock
    finally:
        release.set()
        holder.join()
    done = rita.post(f"/api/approvals/{approval}/decide/", json={"decision": "approve"})
    assert done.status_code == 200 and done.json()["status"] == "approved", done.text
