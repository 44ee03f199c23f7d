"""An MCP server's question over Streamable HTTP with resumable streams, on the real stack (a live
Celery worker on real Redis, the fake OpenAI model, the demo notes server as a subprocess with an
in-memory event store: tests/mcp_servers/resumable_server.py): the run pauses and its worker is
let go, the person's answer goes back to the server in the continuation and the call's result
reaches the model once; a server restarted in between has lost the session."""

import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest
from celery.worker import state as worker_state
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from agents.mcp_servers import client, services
from agents.models import InputRequest, Message, Run, ToolCall
from approvals.models import AuditEvent
from tests.agents.test_agui import run_input, user_msg
from tests.agents.test_workflows import sse
from tests.conftest import wait_for_event
from tests.integration.test_integration import continuation_finished, finished
from tests.integration.test_mcp_servers import call, results, start, until
from tests.mcp_servers import conftest as mcp_conftest
from tests.mcp_servers.conftest import ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


class Server:
    """The resumable notes server on a port of its own; restart() keeps the port and the notes file
    and loses every session (they live in the process)."""

    def __init__(self, notes_file):
        self.notes_file = notes_file
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.mcp_servers.resumable_server", str(self.port)],
                                     cwd=ROOT, env={**os.environ, "AGUI_NOTES_FILE": str(self.notes_file)},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("the MCP server did not start listening")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)

    def restart(self):
        self.stop()
        self.start()


fresh_mcp = mcp_conftest.fresh_mcp  # the fixture: no MCP tool or session left from another test


@pytest.fixture(autouse=True)
def _fresh_mcp(settings, fresh_mcp):
    settings.AGUI_UNDO_SECONDS = 0


@pytest.fixture
def web(demo, tmp_path):
    server = Server(tmp_path / "notes.json")
    server.start()
    row = services.save_server("web", {"transport": "http", "url": f"http://127.0.0.1:{server.port}/mcp",
                                       "agents": ["notes"]})
    assert row.healthy, row.error
    yield server
    client.hub.close_all()  # while the server still answers their DELETE
    server.stop()


def notes(server):
    text = server.notes_file.read_text() if server.notes_file.exists() else ""
    return {n["id"]: n for n in json.loads(text)} if text.strip() else {}


def paused_on_the_question(thread, run_id, call_id):
    """The run ended interrupted on the server's question, and no worker task is left running."""
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED" and event["outcome"]["type"] == "interrupt", event
    (interrupt,) = event["outcome"]["interrupts"]
    assert interrupt["reason"] == "input_required" and interrupt["toolCallId"] == call_id
    assert Run.objects.get(pk=run_id).status == "interrupted"
    tc = ToolCall.objects.get(pk=call_id)
    assert tc.status == "awaiting_input"
    resume = tc.resume["mcp"]
    assert resume["session_id"] and resume["token"] and resume["elicitation_id"] is not None
    until(lambda: not worker_state.active_requests)  # the task returned: nothing holds the call
    return interrupt


def test_an_http_elicitation_pauses_the_run_and_the_answer_reaches_the_server(
        celery_worker_live, fake_llm, api, web):
    # not idempotent: only the parked session itself can give its result (it is never called again)
    fake_llm.push(call("web__archive_once", {"note_id": 1}, "c_arch"), "Archived.")
    thread, run_id = start(api)
    interrupt = paused_on_the_question(thread, run_id, "c_arch")
    assert interrupt["message"] == (
        "Archive the note \u201cRenew the office lease before March\u201d once? (asked by the MCP server web)")
    assert interrupt["responseSchema"]["properties"]["confirm"]["type"] == "boolean"
    assert notes(web) == {} or not notes(web)[1]["archived"]
    assert len(fake_llm.requests) == 1  # the model waits for the call's result

    alice = api("alice")
    resp = alice.post(f"/api/threads/{thread}/answer/", {"request_id": interrupt["id"], "answer": {"confirm": True}},
                      format="json")
    assert resp.status_code == 202, resp.content
    assert resp.json()["continuation_run_id"]
    event, _ = wait_for_event(thread, continuation_finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    assert notes(web)[1]["archived"] is True  # the server got the content
    tc = ToolCall.objects.get(pk="c_arch")
    assert tc.status == "succeeded" and tc.result == "Archived note 1 once."
    assert tc.attempts == 1  # taken up again after the answer, not run again: a lost worker's retries are intact
    assert [r["toolCallId"] for r in results(thread)] == ["c_arch"]
    assert Message.objects.filter(tool_call_id="c_arch").count() == 1
    assert len(fake_llm.requests) == 2 and fake_llm.requests[-1]["messages"][-1]["content"] == tc.result
    assert InputRequest.objects.get(pk=interrupt["id"]).status == "answered"


def test_a_cancelled_http_elicitation_tells_the_server_and_the_model(celery_worker_live, fake_llm, api, web):
    fake_llm.push(call("web__archive_once", {"note_id": 2}, "c_arch"), "Not archived.")
    thread, run_id = start(api)
    interrupt = paused_on_the_question(thread, run_id, "c_arch")
    resp = api("alice").post(f"/api/threads/{thread}/answer/", {"request_id": interrupt["id"], "cancel": True},
                             format="json")
    assert resp.status_code == 202, resp.content
    event, _ = wait_for_event(thread, continuation_finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    tc = ToolCall.objects.get(pk="c_arch")
    assert tc.status == "succeeded" and tc.result == "Note 2 was not archived: the person did not confirm."
    assert fake_llm.requests[-1]["messages"][-1]["content"] == tc.result
    assert not any(n["archived"] for n in notes(web).values())


def test_a_restarted_server_leaves_a_parked_calls_outcome_unknown(celery_worker_live, fake_llm, api, web):
    fake_llm.push(call("web__archive_once", {"note_id": 1}, "c_once"), "I cannot tell whether it was archived.")
    thread, run_id = start(api)
    interrupt = paused_on_the_question(thread, run_id, "c_once")
    web.restart()  # the session and its question are gone with the process
    resp = api("alice").post(f"/api/threads/{thread}/answer/", {"request_id": interrupt["id"],
                                                                "answer": {"confirm": True}}, format="json")
    assert resp.status_code == 202, resp.content
    event, _ = wait_for_event(thread, continuation_finished(run_id), timeout=40)
    assert event["type"] == "RUN_FINISHED", event
    tc = ToolCall.objects.get(pk="c_once")
    assert tc.status == "outcome_unknown"  # not idempotent: not run again
    assert "the outcome of web__archive_once is unknown" in tc.result
    assert "no longer knows the session" in tc.result
    assert [r["content"] for r in results(thread)] == [tc.result]  # what the person's chat shows
    assert fake_llm.requests[-1]["messages"][-1]["content"] == tc.result
    assert AuditEvent.objects.filter(action=AuditEvent.Action.OUTCOME_UNKNOWN, object_ref="toolcall:c_once").exists()
    assert not notes(web) or not notes(web)[1]["archived"]


def test_a_restarted_server_runs_an_idempotent_parked_call_again_with_the_answer(
        celery_worker_live, fake_llm, api, web):
    fake_llm.push(call("web__archive", {"note_id": 3}, "c_arch"), "Archived.")
    thread, run_id = start(api)
    interrupt = paused_on_the_question(thread, run_id, "c_arch")
    web.restart()
    resp = api("alice").post(f"/api/threads/{thread}/answer/", {"request_id": interrupt["id"],
                                                                "answer": {"confirm": True}}, format="json")
    assert resp.status_code == 202, resp.content
    event, _ = wait_for_event(thread, continuation_finished(run_id), timeout=40)
    assert event["type"] == "RUN_FINISHED", event
    tc = ToolCall.objects.get(pk="c_arch")
    assert tc.status == "succeeded" and tc.result == "Archived note 3."
    assert notes(web)[3]["archived"] is True
    assert InputRequest.objects.filter(tool_call_id="c_arch").count() == 1  # the person was asked once
    assert [r["toolCallId"] for r in results(thread)] == ["c_arch"]


def test_an_agui_client_answers_the_servers_question_with_resume(celery_worker_live, fake_llm, client, web):
    alice = get_user_model().objects.get(username="alice")
    token = Token.objects.get_or_create(user=alice)[0].key
    fake_llm.push(call("web__archive_once", {"note_id": 2}, "c_arch"), "Archived it.")
    thread_id = f"t-{uuid.uuid4()}"
    first = sse(client, token, run_input(thread_id, [user_msg("Archive note 2")]), agent="notes")
    assert first[-1]["type"] == "RUN_FINISHED" and first[-1]["outcome"]["type"] == "interrupt", first[-1]
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "input_required" and interrupt["toolCallId"] == "c_arch"
    [asked] = [e["value"] for e in first if e["type"] == "CUSTOM" and e["name"] == "request_info"]
    assert asked["requestId"] == interrupt["id"]
    until(lambda: not worker_state.active_requests)

    second_id = f"run-{uuid.uuid4()}"
    second = sse(client, token, run_input(thread_id, run_id=second_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"confirm": True}}]), agent="notes")
    assert second[0]["runId"] == second_id and second[0]["parentRunId"] == first[0]["runId"]
    [result] = [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "c_arch" and result["content"] == "Archived note 2 once."
    assert second[-1]["type"] == "RUN_FINISHED" and "outcome" not in second[-1]
    assert notes(web)[2]["archived"] is True
    assert fake_llm.requests[-1]["messages"][-1]["content"] == "Archived note 2 once."
