"""/api/mcp-servers/ with real servers as subprocesses (the demo notes server, the npm filesystem
server): registered, listed and policed; an unreachable or garbage server is marked, nothing breaks."""

import json
import logging
import sys
from datetime import timedelta

import pytest

from agents.mcp_servers import catalog, services
from agents.mcp_servers.models import MCPServer
from agents.mcp_servers.tasks import check_servers
from agents.registry import get_agent
from agents.runtime.tools import OutcomeUnknown, ToolError
from approvals import policy, registry
from tests.mcp_servers.conftest import fs_values, hang_values, need_filesystem_server, notes_values

pytestmark = pytest.mark.django_db
SECRET = "sk-live-do-not-show-0123456789"


def test_an_admin_registers_the_demo_server_and_its_tools_are_policed_like_ours(api, notes_file, caplog):
    caplog.set_level(logging.DEBUG)
    admin = api("admin")
    body = {"name": "notes2", **notes_values(notes_file), "env": {"AGUI_NOTES_FILE": str(notes_file), "API_KEY": SECRET}}
    resp = admin.post("/api/mcp-servers/", body, format="json")
    assert resp.status_code == 201, resp.content
    data = resp.json()
    assert data["healthy"] is True and data["error"] == ""
    assert data["env_keys"] == ["AGUI_NOTES_FILE", "API_KEY"] and "env" not in data  # write-only
    tools = {t["mcp_name"]: t for t in data["tools"]}
    assert set(tools) == {"search", "tag", "delete", "archive", "enable_export"}
    assert (tools["search"]["name"], tools["search"]["mode"], tools["search"]["risk"]) == ("notes2__search", "never", "low")
    assert (tools["delete"]["mode"], tools["delete"]["risk"], tools["delete"]["reversible"]) == ("always", "high", False)
    assert tools["tag"]["idempotent"] is True

    detail = admin.get("/api/mcp-servers/notes2/")
    assert detail.status_code == 200 and detail.json()["tools"] == data["tools"]
    assert SECRET not in detail.content.decode() and SECRET not in resp.content.decode()
    assert SECRET not in caplog.text

    listed = {p["tool_name"]: p for p in admin.get("/api/policies/?page_size=500").json()["results"]}
    assert listed["notes2__delete"]["source"] == "default" and listed["notes2__delete"]["mode"] == "always"
    assert listed["notes2__delete"]["approver_group"] == "reviewers" and listed["notes2__delete"]["registered"]
    assert listed["notes2__delete"]["server"] == "notes2" and listed["transfer_money"]["server"] is None
    # the same engine judges them: a read runs, a delete goes to the reviewers
    assert policy.evaluate("notes2__search", {"query": ""}).action == "auto"
    verdict = policy.evaluate("notes2__delete", {"note_id": 1})
    assert verdict.action == "approve" and verdict.group.name == "reviewers" and verdict.risk == "high"
    # an admin overrides one tool, as for any tool
    resp = admin.patch("/api/policies/notes2__delete/", {"mode": "deny"}, format="json")
    assert resp.status_code == 201, resp.content
    assert policy.evaluate("notes2__delete", {"note_id": 1}).action == "deny"
    # a call: its result is the model's; the server's isError is a tool error with its text
    assert "Renew the office lease" in catalog.get("notes2__search").run(None, {"query": "lease"})
    with pytest.raises(ToolError, match="there is no note 99"):
        catalog.get("notes2__delete").run(None, {"note_id": 99})
    # the agents it names are offered its tools
    assert get_agent("notes").tool("notes2__search") is not None
    assert "notes2__search" not in {t.name for t in get_agent("banking").all_tools()}


def test_secrets_can_be_replaced_but_are_never_answered(api, notes_file):
    admin = api("admin")
    admin.post("/api/mcp-servers/", {"name": "notes2", **notes_values(notes_file)}, format="json")
    resp = admin.patch("/api/mcp-servers/notes2/", {"headers": {"Authorization": f"Bearer {SECRET}"}}, format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["header_names"] == ["Authorization"] and SECRET not in resp.content.decode()
    row = MCPServer.objects.get(name="notes2")
    assert row.headers == {"Authorization": f"Bearer {SECRET}"} and row.env == {"AGUI_NOTES_FILE": str(notes_file)}
    assert SECRET not in repr(catalog.endpoint_of(row))


def test_a_server_that_is_down_at_start_is_unhealthy_and_offers_nothing(api, notes_file):
    admin = api("admin")
    resp = admin.post("/api/mcp-servers/", {"name": "gone", "transport": "stdio", "command": "/nonexistent/server",
                                            "agents": ["notes"]}, format="json")
    assert resp.status_code == 201, resp.content
    assert resp.json()["healthy"] is False and "not found" in resp.json()["error"]
    assert not [t for t in get_agent("notes").all_tools() if t.name.startswith("gone__")]
    # fixed and asked again: healthy, its tools offered
    resp = admin.put("/api/mcp-servers/gone/", {"name": "gone", **notes_values(notes_file)}, format="json")
    assert resp.json()["healthy"] is True
    assert "gone__search" in {t.name for t in get_agent("notes").all_tools()}


def test_a_server_that_answers_garbage_is_unhealthy(api, settings):
    settings.AGUI_MCP_CONNECT_TIMEOUT = 3
    resp = api("admin").post("/api/mcp-servers/", {
        "name": "garbage", "transport": "stdio", "command": sys.executable,
        "args": ["-c", "print('hello, not JSON-RPC'); import time; time.sleep(30)"], "agents": ["notes"]}, format="json")
    assert resp.status_code == 201
    assert resp.json()["healthy"] is False and resp.json()["error"]
    assert registry.get("garbage__search") is None


def test_refresh_on_demand_and_delete(api, notes_file):
    admin = api("admin")
    admin.post("/api/mcp-servers/", {"name": "notes2", **notes_values(notes_file)}, format="json")
    assert admin.post("/api/mcp-servers/notes2/refresh/").json()["healthy"] is True
    assert admin.delete("/api/mcp-servers/notes2/").status_code == 204
    assert registry.get("notes2__search") is None
    assert admin.get("/api/mcp-servers/notes2/").status_code == 404


def test_bad_registrations_are_refused(api):
    admin = api("admin")
    assert admin.post("/api/mcp-servers/", {"name": "Bad_Name", "command": "x"}, format="json").status_code == 400
    resp = admin.post("/api/mcp-servers/", {"name": "web", "transport": "http"}, format="json")
    assert resp.json()["url"] == ["a Streamable HTTP server needs a URL"]
    resp = admin.post("/api/mcp-servers/", {"name": "x", "command": "true", "agents": ["nobody"]}, format="json")
    assert resp.status_code == 400 and "agents" in resp.json()


def test_only_admins(api):
    for who in ("alice", "rita"):
        assert api(who).get("/api/mcp-servers/").status_code == 403
        assert api(who).post("/api/mcp-servers/", {"name": "x", "command": "true"}, format="json").status_code == 403


def test_the_filesystem_servers_annotations_become_policies(api, tmp_path):
    need_filesystem_server()
    resp = api("admin").post("/api/mcp-servers/", {"name": "fs", **fs_values(tmp_path)}, format="json")
    assert resp.json()["healthy"] is True, resp.json()["error"]
    modes = {t["mcp_name"]: (t["mode"], t["risk"]) for t in resp.json()["tools"]}
    assert modes["read_text_file"] == ("never", "low") and modes["list_directory"] == ("never", "low")
    assert modes["write_file"] == ("always", "high") and modes["move_file"] == ("always", "high")
    assert modes["create_directory"] == ("never", "medium")
    assert registry.get("fs__write_file").idempotent and not registry.get("fs__edit_file").idempotent


def test_the_console_says_which_server_a_tool_comes_from(api, login, notes_file):
    api("admin").post("/api/mcp-servers/", {"name": "notes2", **notes_values(notes_file)}, format="json")
    admin = login("admin")
    page = admin.get("/policies/").content.decode()
    assert "MCP server notes2" in page and "notes2__delete" in page
    edit = admin.get("/policies/notes2__delete/").content.decode()
    assert "From the MCP server notes2, where it is called delete" in edit
    assert "MCP server" not in admin.get("/policies/transfer_money/").content.decode()


def test_a_call_without_an_answer_is_unknown_unless_the_tool_is_idempotent(demo, settings, tmp_path):
    """tools/call past AGUI_MCP_CALL_TIMEOUT: a tool that is not idempotent is not run again (its
    outcome is unknown); an idempotent one is run again and its answer used."""
    settings.AGUI_MCP_CALL_TIMEOUT = 1
    assert services.save_server("hang", hang_values()).healthy
    with pytest.raises(OutcomeUnknown, match="no answer within 1 s"):
        catalog.get("hang__hang").run(None, {"marker": str(tmp_path / "a")})
    assert catalog.get("hang__hang_once").idempotent
    assert catalog.get("hang__hang_once").run(None, {"marker": str(tmp_path / "b")}) == "done the second time"


def test_a_streamable_http_server_with_a_secret_header(api, notes_http):
    """The demo server over Streamable HTTP (a subprocess on a free port): listed and called."""
    resp = api("admin").post("/api/mcp-servers/", {
        "name": "web", "transport": "http", "url": notes_http,
        "headers": {"Authorization": f"Bearer {SECRET}"}, "agents": ["notes"]}, format="json")
    assert resp.status_code == 201, resp.content
    assert resp.json()["healthy"] is True, resp.json()["error"]
    assert resp.json()["header_names"] == ["Authorization"] and SECRET not in resp.content.decode()
    assert "Renew the office lease" in catalog.get("web__search").run(None, {"query": "lease"})


def test_the_agent_card_and_agui_capabilities_list_its_mcp_tools(api, login, notes_file):
    services.save_server("notes", notes_values(notes_file))
    caps = api("alice").get("/agui/notes").json()
    items = {t["name"] for t in caps["tools"]["items"]}
    assert {"notes__search", "notes__delete"} <= items
    assert "notes__delete" in login("alice").get("/chat/").content.decode()  # the chat's agent card lists it


def test_the_admin_never_sends_the_secrets_back_and_a_blank_keeps_them(api, login, notes_file):
    services.save_server("notes", {**notes_values(notes_file), "env": {"AGUI_NOTES_FILE": str(notes_file),
                                                                       "API_KEY": SECRET}})
    row = MCPServer.objects.get(name="notes")
    admin = login("admin")
    page = admin.get(f"/admin/mcp_servers/mcpserver/{row.pk}/change/").content.decode()
    assert "AGUI_NOTES_FILE, API_KEY" in page and SECRET not in page
    form = {"name": "notes", "transport": "stdio", "command": row.command, "args": json.dumps(row.args),
            "cwd": row.cwd, "url": "", "agents": json.dumps(["notes"]), "enabled": "on", "new_env": "",
            "new_headers": ""}
    resp = admin.post(f"/admin/mcp_servers/mcpserver/{row.pk}/change/", form)
    assert resp.status_code == 302, resp.content.decode()[:2000]
    assert MCPServer.objects.get(name="notes").env["API_KEY"] == SECRET  # blank: kept
    resp = admin.post(f"/admin/mcp_servers/mcpserver/{row.pk}/change/",
                      {**form, "new_env": json.dumps({"AGUI_NOTES_FILE": str(notes_file)})})
    assert resp.status_code == 302
    assert MCPServer.objects.get(name="notes").env == {"AGUI_NOTES_FILE": str(notes_file)}


def test_the_beat_asks_servers_never_asked_and_unhealthy_ones(demo, notes_file):
    services.save_server("notes", notes_values(notes_file), refresh=False)  # as seed_demo registers it
    assert not MCPServer.objects.get(name="notes").healthy and registry.get("notes__search") is None
    check_servers()
    assert MCPServer.objects.get(name="notes").healthy and registry.get("notes__search") is not None
    services.mark_unhealthy("notes", "it stopped")
    MCPServer.objects.filter(name="notes").update(checked_at=MCPServer.objects.get(name="notes").checked_at
                                                  - timedelta(seconds=31))
    assert services.check_due() == {"notes": True}
    assert services.check_due() == {}  # healthy and asked: left alone


def test_a_stdio_command_is_set_by_a_signed_in_admin_not_by_a_token(api, demo, notes_file, settings):
    """A stdio server is a program this machine runs: by default an admin's API token may not set one
    (a leaked token must not run programs here); a signed-in admin may, and the token may still
    switch a server off, route it to agents or register a Streamable HTTP server."""
    from rest_framework.test import APIClient

    settings.AGUI_MCP_COMMANDS_BY_TOKEN = False
    token = api("admin")
    refused = token.post("/api/mcp-servers/", {"name": "notes2", **notes_values(notes_file)}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "commands_need_sign_in", refused.content
    assert "signed in" in refused.json()["message"] and not MCPServer.objects.filter(name="notes2").exists()
    assert token.patch("/api/mcp-servers/notes/", {"command": "/bin/sh", "args": ["-c", "id"]},
                       format="json").status_code == 403
    assert MCPServer.objects.get(name="notes").command != "/bin/sh"
    assert token.patch("/api/mcp-servers/notes/", {"enabled": False}, format="json").status_code == 200
    web = token.post("/api/mcp-servers/", {"name": "web", "transport": "http", "url": "http://127.0.0.1:9/mcp"},
                     format="json")
    assert web.status_code == 201, web.content
    # nor kept on an http server for whoever turns it to stdio later: its environment (write-only, never
    # shown) ran with the command a signed-in admin typed then
    for planted in ({"env": {"PYTHONPATH": "/tmp/evil"}}, {"command": "/bin/sh", "args": ["-c", "id"]},
                    {"cwd": "/tmp/evil"}):
        sent = token.post("/api/mcp-servers/", {"name": "web2", "transport": "http", "url": "http://127.0.0.1:9/mcp",
                                                **planted}, format="json")
        assert sent.status_code == 403 and sent.json()["code"] == "commands_need_sign_in", (planted, sent.content)
        assert token.patch("/api/mcp-servers/web/", planted, format="json").status_code == 403
    assert not MCPServer.objects.filter(name="web2").exists() and MCPServer.objects.get(name="web").env == {}

    session = APIClient()
    session.force_login(demo["admin"])
    made = session.post("/api/mcp-servers/", {"name": "notes2", **notes_values(notes_file)}, format="json")
    assert made.status_code == 201 and made.json()["healthy"] is True, made.content


def test_put_replaces_a_server_but_keeps_its_write_only_secrets(api, settings):
    """PUT restates the whole server: a field left out takes the model default (not the stored value),
    except env and headers, which no answer shows and so no client can send back: they are kept."""
    settings.AGUI_MCP_COMMANDS_BY_TOKEN = False
    token = api("admin")
    made = token.post("/api/mcp-servers/", {"name": "web", "transport": "http", "url": "http://127.0.0.1:9/mcp",
                                            "headers": {"Authorization": f"Bearer {SECRET}"}, "agents": ["notes"],
                                            "enabled": False}, format="json")
    assert made.status_code == 201, made.content
    resp = token.put("/api/mcp-servers/web/", {"name": "web", "transport": "http", "url": "http://127.0.0.1:9/other"},
                     format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["agents"] == [] and resp.json()["enabled"] is True and resp.json()["header_names"] == ["Authorization"]
    row = MCPServer.objects.get(name="web")
    assert (row.url, row.agents, row.enabled) == ("http://127.0.0.1:9/other", [], True)
    assert row.headers == {"Authorization": f"Bearer {SECRET}"}
    # PATCH changes only what it sends
    resp = token.patch("/api/mcp-servers/web/", {"agents": ["notes"]}, format="json")
    assert resp.status_code == 200 and resp.json()["url"] == "http://127.0.0.1:9/other" and resp.json()["agents"] == ["notes"]

    # a token's PUT of a stdio server that restates its command may switch it off; changing the command may not
    notes = token.get("/api/mcp-servers/notes/").json()
    same = {k: notes[k] for k in ("name", "transport", "command", "args", "cwd", "url", "agents")}
    resp = token.put("/api/mcp-servers/notes/", {**same, "enabled": False}, format="json")
    assert resp.status_code == 200, resp.content
    row = MCPServer.objects.get(name="notes")
    assert row.enabled is False and row.env  # its environment kept
    refused = token.put("/api/mcp-servers/notes/", {**same, "args": ["-c", "id"], "enabled": False}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "commands_need_sign_in"
    assert MCPServer.objects.get(name="notes").args == notes["args"]


def test_deleting_servers_with_the_admins_action_tells_every_process(login, demo, notes_file,
                                                                   django_capture_on_commit_callbacks):
    """The list's "delete selected" took the rows out without the service: no other process heard
    of it (the change token in Redis stayed), so workers kept offering and calling the deleted
    servers' tools; deleting one from its own page told them."""
    services.save_server("notes", notes_values(notes_file), refresh=False)
    row = MCPServer.objects.get(name="notes")
    catalog.announce()
    before = catalog._changes()
    admin = login("admin")
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin.post("/admin/mcp_servers/mcpserver/", {
            "action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert resp.status_code == 302 and not MCPServer.objects.filter(pk=row.pk).exists()
    assert catalog._changes() != before


def test_a_server_keeps_its_name_in_the_admin(login, demo, notes_file):
    """Its tools are named after it (notes__search) and their policies by those names: the change
    form took a new name and saved a second server under it, without the first one's environment,
    leaving the first in place and the policies of its tools applying to neither's new names."""
    services.save_server("notes", notes_values(notes_file), refresh=False)
    row = MCPServer.objects.get(name="notes")
    form = {"name": "notes2", "transport": "stdio", "command": row.command, "args": json.dumps(row.args),
            "cwd": row.cwd, "url": "", "agents": json.dumps(["notes"]), "enabled": "", "new_env": "",
            "new_headers": ""}
    login("admin").post(f"/admin/mcp_servers/mcpserver/{row.pk}/change/", form)
    assert list(MCPServer.objects.values_list("name", flat=True)) == ["notes"]
