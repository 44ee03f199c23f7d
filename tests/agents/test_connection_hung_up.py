"""A run whose database connection the server ended while the model answered (a restart, a
failover, pg_terminate_backend, an idle-session killer) goes on with another connection: it failed
with internal_error at its first statement after the answer, and the answer streamed was lost."""

import time

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from agents import services
from agents.models import Message, Run, Thread
from agents.runtime import runner

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                                 reason="SQLite's connections are not ended by a server")]


def _terminate(pid):
    """pg_terminate_backend signals the backend and returns; it ends (and closes its socket) a moment
    later, later still on a busy machine. Returns once it has: the connection ended while the model
    answered, as the test means, not while the worker looks at it."""
    db = settings.DATABASES["default"]
    with psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"],
                         password=db["PASSWORD"] or None, dbname=db["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 30
        while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, f"backend {pid} still there 30 s after its termination"


def test_a_connection_ended_while_the_model_answered_is_replaced(demo, fake_llm, monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = services.start_run(thread, demo["alice"], "Tell me something")
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid

    def answer(body):  # while the worker waits for the model, the server ends its connection
        _terminate(pid)
        return "Here is something."
    fake_llm.responder = answer
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    assert Message.objects.filter(thread=thread, role="assistant", content="Here is something.").exists()
