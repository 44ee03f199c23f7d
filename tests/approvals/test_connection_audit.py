"""What the product is connected to is in the audit trail: a webhook endpoint hears every request's
arguments, and a stdio MCP server is a command run on this host, yet adding, switching or deleting
either left no audit row (only Django's admin log, which is neither append-only nor exported, and
nothing at all through the API). No secret is recorded: an address without its query or credentials,
the names of an MCP server's environment variables and headers, not their values."""

import csv
import io

import pytest

from agents.mcp_servers.models import MCPServer
from approvals.models import AuditEvent

pytestmark = pytest.mark.django_db
CONNECTIONS = ("webhook_added", "webhook_changed", "webhook_deleted", "mcp_server_added", "mcp_server_changed",
               "mcp_server_deleted")


def recorded(since):
    return [(e.action, e.actor.username if e.actor_id else None, e.object_ref, e.before, e.after)
            for e in AuditEvent.objects.filter(action__in=CONNECTIONS, pk__gt=since).order_by("id")]


def last_id():
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def test_a_webhook_added_switched_off_and_deleted_through_the_api_names_the_admin(api, demo):
    since = last_id()
    made = api("admin").post("/api/webhooks/", {"url": "https://hooks.example.com/in?token=s3cret",
                                                "events": ["approval.requested"]}, format="json")
    assert made.status_code == 201, made.content
    pk = made.json()["id"]
    assert api("admin").patch(f"/api/webhooks/{pk}/", {"is_active": False}, format="json").status_code == 200
    assert api("admin").delete(f"/api/webhooks/{pk}/").status_code == 204
    rows = recorded(since)
    assert rows == [
        ("webhook_added", "admin", f"webhook:{pk}", None,
         {"url": "https://hooks.example.com/in", "events": ["approval.requested"], "description": "",
          "is_active": True}),
        ("webhook_changed", "admin", f"webhook:{pk}", {"url": "https://hooks.example.com/in", "is_active": True},
         {"url": "https://hooks.example.com/in", "is_active": False}),
        ("webhook_deleted", "admin", f"webhook:{pk}",
         {"url": "https://hooks.example.com/in", "events": ["approval.requested"], "description": "",
          "is_active": False}, None),
    ]
    assert "s3cret" not in repr(list(AuditEvent.objects.filter(pk__gt=since).values()))
    summaries = [r["summary"] for r in api("admin").get(f"/api/audit/?object_ref=webhook:{pk}").json()["results"]]
    assert summaries == ["webhook https://hooks.example.com/in deleted",
                         "webhook https://hooks.example.com/in changed: switched off",
                         "webhook https://hooks.example.com/in added"]


def test_an_mcp_server_is_recorded_with_the_names_of_its_secrets_only_and_a_health_check_records_nothing(admin_client):
    since = last_id()
    server = MCPServer.objects.create(name="files", transport="stdio", command="/usr/bin/mcp-files",
                                      args=["--root", "/srv"], env={"API_KEY": "k-123"}, agents=["ops"])
    MCPServer.objects.filter(pk=server.pk).update(healthy=True, error="", tools=[{"name": "read"}])  # a health check
    server.refresh_from_db()
    server.enabled = False
    server.save()
    server.env = {"API_KEY": "k-456"}  # a value changed: no name changed, nothing to say without saying it
    server.save()
    server.command = "/tmp/other"
    server.save()
    rows = recorded(since)
    assert [(a, ref, before, after) for a, _actor, ref, before, after in rows] == [
        ("mcp_server_added", "mcp:files", None,
         {"name": "files", "transport": "stdio", "command": "/usr/bin/mcp-files", "args": ["--root", "/srv"], "cwd": "",
          "url": "", "env": ["API_KEY"], "headers": [], "agents": ["ops"], "enabled": True}),
        ("mcp_server_changed", "mcp:files", {"name": "files", "enabled": True}, {"name": "files", "enabled": False}),
        ("mcp_server_changed", "mcp:files", {"name": "files", "command": "/usr/bin/mcp-files"},
         {"name": "files", "command": "/tmp/other"}),
    ]
    assert all(actor is None for _a, actor, *_ in rows)  # code with no request: "system"
    assert "k-123" not in repr(list(AuditEvent.objects.filter(pk__gt=since).values()))
    page = admin_client.get("/audit/?object_ref=mcp:files").content.decode()
    assert "MCP server files changed: command" in page and "MCP server files changed: switched off" in page
    resp = admin_client.get("/audit/export.csv?object_ref=mcp:files")
    exported = list(csv.reader(io.StringIO(b"".join(resp.streaming_content).decode())))
    assert [r[-1] for r in exported[1:]] == ["MCP server files changed: command", "MCP server files changed: switched off",
                                             "MCP server files added"]
    server.delete()
    assert recorded(since)[-1][0] == "mcp_server_deleted"


def test_a_reviewer_reads_none_of_them(api, demo):
    MCPServer.objects.create(name="files", transport="stdio", command="/usr/bin/mcp-files")
    assert api("finn").get("/api/audit/?object_ref=mcp:files").json()["results"] == []
