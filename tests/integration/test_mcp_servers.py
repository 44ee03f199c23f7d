"""MCP servers on the real stack: a live Celery worker on real Redis, the fake OpenAI model, and MCP
servers started as subprocesses over stdio (the demo notes server, the npm filesystem server, a
test server that never answers): listed and policed, a destructive call paused, approved in the
inbox and executed once, a server killed mid-call, a server down at start, a list_changed notification."""

import json
import os
import signal
import time

import pytest

from agents.mcp_servers import catalog, services
from agents.mcp_servers.models import MCPServer
from agents.models import InputRequest, Message, ToolCall
from approvals import registry
from approvals.models import ApprovalRequest, AuditEvent
from tests.conftest import stream_events, wait_for_event
from tests.integration.test_integration import continuation_finished, finished
from tests.mcp_servers import conftest as mcp_conftest
from tests.mcp_servers.conftest import fs_values, hang_values, need_filesystem_server, notes_values

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


fresh_mcp = mcp_conftest.fresh_mcp  # the fixture: no MCP tool or session left from another test


@pytest.fixture(autouse=True)
def _fresh_mcp(settings, fresh_mcp):
    settings.AGUI_UNDO_SECONDS = 0  # the inbox sends a decision at once


@pytest.fixture
def notes(demo, tmp_path):
    path = tmp_path / "notes.json"
    row = services.save_server("notes", notes_values(path))
    assert row.healthy, row.error
    return path


def call(name, arguments, call_id):
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": json.dumps(arguments)}]}


def start(api, text="Please", agent="notes"):
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": agent}, format="json").json()["id"]
    resp = alice.post(f"/api/threads/{thread}/messages/", {"content": text}, format="json")
    assert resp.status_code == 202, resp.content
    return thread, resp.json()["run_id"]


def note_ids(path):
    text = path.read_text() if path.exists() else ""
    return [n["id"] for n in json.loads(text)] if text.strip() else [1, 2, 3]  # the server's seed


def results(thread):
    return [e for e in stream_events(thread) if e["type"] == "TOOL_CALL_RESULT"]


def until(predicate, timeout=15.0):
    """Waits for a condition another process or thread makes true (no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("the condition did not come true in time")


def test_a_destructive_call_waits_for_the_inbox_and_runs_once(celery_worker_live, fake_llm, api, login, notes):
    fake_llm.push(call("notes__search", {"query": "old"}, "c_search"), call("notes__delete", {"note_id": 3}, "c_del"),
                  "Note 3 is deleted.")
    thread, run_id = start(api, "Delete my old notes")
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert {"notes__search", "notes__tag", "notes__delete", "notes__archive"} <= offered
    # the read ran at once; the delete waits for a reviewer, with the server named
    assert ToolCall.objects.get(pk="c_search").status == "succeeded"
    assert "Old meeting notes" in results(thread)[0]["content"]
    request = ApprovalRequest.objects.get(tool_call_ref="c_del")
    assert request.status == "pending" and request.approver_group.name == "reviewers"
    assert (request.risk, request.reversible) == ("high", False)
    assert request.context["mcp"] == {"server": "notes", "tool": "delete", "open_world": False, "destructive": True,
                                      "read_only": False}
    assert "MCP server notes" in request.description and "cannot be undone" in request.impact
    assert 3 in note_ids(notes)

    resp = login("rita").post(f"/inbox/{request.pk}/", {"action": "approve"})
    assert resp.status_code == 302
    event, _ = wait_for_event(thread, continuation_finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    assert note_ids(notes) == [1, 2]
    tc = ToolCall.objects.get(pk="c_del")
    assert tc.status == "succeeded" and tc.attempts == 1 and tc.result == "Deleted note 3 (Old meeting notes from the 2024 offsite)."
    assert [r["toolCallId"] for r in results(thread)] == ["c_search", "c_del"]
    assert Message.objects.filter(tool_call_id="c_del").count() == 1
    assert fake_llm.requests[-1]["messages"][-1]["content"].startswith("Deleted note 3")


def test_the_filesystem_servers_tools_are_policed(celery_worker_live, fake_llm, api, tmp_path):
    need_filesystem_server()
    root = tmp_path / "files"
    root.mkdir()
    (root / "hello.txt").write_text("hello from disk")
    row = services.save_server("fs", fs_values(root))
    assert row.healthy, row.error
    fake_llm.push(call("fs__read_text_file", {"path": str(root / "hello.txt")}, "c_read"),
                  call("fs__write_file", {"path": str(root / "new.txt"), "content": "written"}, "c_write"), "Done.")
    thread, run_id = start(api, "Copy it")
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    assert results(thread)[0]["content"] == "hello from disk"  # read-only: never asked
    request = ApprovalRequest.objects.get(tool_call_ref="c_write")  # destructive: the reviewers decide
    assert request.status == "pending" and request.risk == "high" and request.context["mcp"]["server"] == "fs"
    assert not (root / "new.txt").exists()
    resp = api("rita").post(f"/api/approvals/{request.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200, resp.content
    event, _ = wait_for_event(thread, continuation_finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    assert (root / "new.txt").read_text() == "written"
    assert ToolCall.objects.get(pk="c_write").status == "succeeded"


def test_a_server_killed_mid_call_leaves_the_outcome_unknown(celery_worker_live, fake_llm, api, tmp_path):
    row = services.save_server("hang", hang_values())
    assert row.healthy, row.error
    marker = tmp_path / "pid"
    fake_llm.push(call("hang__hang", {"marker": str(marker)}, "c_hang"), "I could not tell whether it happened.")
    thread, run_id = start(api)
    pid = int(until(lambda: marker.exists() and marker.read_text()))  # the server is inside the call
    assert ToolCall.objects.get(pk="c_hang").status == "executing"
    os.kill(pid, signal.SIGKILL)
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    tc = ToolCall.objects.get(pk="c_hang")
    assert tc.status == "outcome_unknown" and tc.attempts == 1  # not idempotent: not run again
    assert "the outcome of hang__hang is unknown" in tc.result and "stopped during the call" in tc.result
    assert results(thread)[0]["content"] == tc.result
    assert AuditEvent.objects.filter(action=AuditEvent.Action.OUTCOME_UNKNOWN, object_ref="toolcall:c_hang").exists()
    assert fake_llm.requests[-1]["messages"][-1]["content"] == tc.result
    # the next call starts the server again
    fake_llm.push(call("hang__ping", {}, "c_ping"), "It answers again.")
    resp = api("alice").post(f"/api/threads/{thread}/messages/", {"content": "Again"}, format="json")
    event, _ = wait_for_event(thread, finished(resp.json()["run_id"]))
    assert ToolCall.objects.get(pk="c_ping").result.startswith("pong from")
    assert not ToolCall.objects.get(pk="c_ping").result.endswith(str(pid))


def test_a_server_down_at_start_breaks_nothing_else(celery_worker_live, fake_llm, api, notes):
    row = services.save_server("broken", {"transport": "stdio", "command": "/nonexistent/mcp", "agents": ["notes"]})
    assert not row.healthy and "not found" in row.error
    fake_llm.push(call("notes__search", {"query": "laptop"}, "c_s"), "Found it.")
    thread, run_id = start(api)
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert "notes__search" in offered and not [n for n in offered if n.startswith("broken__")]
    assert "laptop" in results(thread)[0]["content"]
    detail = api("admin").get("/api/mcp-servers/broken/").json()
    assert detail["healthy"] is False and "not found" in detail["error"]


def test_a_server_that_stops_between_listing_and_calling_is_marked_and_nothing_runs(
        celery_worker_live, fake_llm, api, notes):
    # moved away after it was listed (still healthy as far as anyone knows): its next session cannot start
    services.save_server("notes", {"command": "/nonexistent/python"}, refresh=False)
    fake_llm.push(call("notes__search", {"query": ""}, "c_s"), "It is down.")
    thread, run_id = start(api)
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    tc = ToolCall.objects.get(pk="c_s")
    assert tc.status == "failed" and "could not be reached" in tc.result and "nothing was executed" in tc.result
    row = MCPServer.objects.get(name="notes")
    assert not row.healthy and "not found" in row.error


def test_list_changed_registers_the_new_tool(celery_worker_live, fake_llm, api, notes):
    assert registry.get("notes__export") is None
    fake_llm.push(call("notes__enable_export", {}, "c_en"), "Export is on.")
    thread, run_id = start(api)
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    # the worker's session hears notifications/tools/list_changed and lists the tools again
    until(lambda: any(t["name"] == "export" for t in MCPServer.objects.get(name="notes").tools))
    catalog.sync(force=True)
    assert registry.get("notes__export").mode == "never"
    policy = api("admin").get("/api/policies/notes__export/").json()
    assert policy["source"] == "default" and policy["registered"] is True


def question(thread):
    event, _ = wait_for_event(thread, lambda e: e["type"] == "CUSTOM" and e["name"] == "request_info")
    return event["value"]


def test_an_elicitation_is_a_question_to_the_person_and_the_answer_goes_back(
        celery_worker_live, fake_llm, api, notes):
    fake_llm.push(call("notes__archive", {"note_id": 1}, "c_arch"), "Archived.")
    thread, run_id = start(api)
    asked = question(thread)
    assert asked["toolCallId"] == "c_arch" and asked["message"] == (
        "Archive the note \u201cRenew the office lease before March\u201d? (asked by the MCP server notes)")
    assert asked["responseSchema"]["properties"]["confirm"]["type"] == "boolean"
    # the call is in flight on the server, the run goes on (not paused)
    assert ToolCall.objects.get(pk="c_arch").status == "executing"
    assert api("alice").get(f"/api/runs/{run_id}/").json()["status"] == "running"
    alice = api("alice")
    bad = alice.post(f"/api/threads/{thread}/answer/", {"request_id": asked["requestId"], "answer": {"confirm": "yes"}},
                     format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_payload"
    resp = alice.post(f"/api/threads/{thread}/answer/", {"request_id": asked["requestId"], "answer": {"confirm": True}},
                      format="json")
    assert resp.status_code == 202, resp.content
    assert resp.json()["continuation_run_id"] is None
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    tc = ToolCall.objects.get(pk="c_arch")
    assert tc.status == "succeeded" and tc.result == "Archived note 1."
    assert json.loads(notes.read_text())[0]["archived"] is True


def test_a_cancelled_elicitation_tells_the_server_no(celery_worker_live, fake_llm, api, notes):
    fake_llm.push(call("notes__archive", {"note_id": 2}, "c_arch"), "Not archived.")
    thread, run_id = start(api)
    asked = question(thread)
    resp = api("alice").post(f"/api/threads/{thread}/answer/", {"request_id": asked["requestId"], "cancel": True},
                             format="json")
    assert resp.status_code == 202, resp.content
    event, _ = wait_for_event(thread, finished(run_id))
    assert ToolCall.objects.get(pk="c_arch").result == "Note 2 was not archived: the person did not confirm."
    assert note_ids(notes) == [1, 2, 3]


def test_stop_during_a_question_withdraws_it_and_the_server_hears_cancel(celery_worker_live, fake_llm, api, notes):
    fake_llm.push(call("notes__archive", {"note_id": 1}, "c_arch"), "Stopped.")
    thread, run_id = start(api)
    asked = question(thread)
    assert api("alice").post(f"/api/runs/{run_id}/cancel/").status_code in (200, 202)
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED" and event["outcome"]["type"] == "cancelled", event
    assert InputRequest.objects.get(pk=asked["requestId"]).status == "cancelled"
    assert ToolCall.objects.get(pk="c_arch").result == "Note 1 was not archived: the person did not confirm."
