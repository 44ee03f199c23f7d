"""The staff flag alone gave the whole of the APIs that reach outside the product: an account the admin
site refuses (staff, no permissions) registered an MCP server's command, which runs on this host, and a
webhook, which is sent every approval's arguments. They now ask the model's Django permissions, as the
admin site does; a superuser, and staff given them, go on as before."""

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

SERVER = {"name": "probe", "transport": "stdio", "command": "/bin/true", "agents": []}


@pytest.fixture
def stan(demo):
    return User.objects.create_user("stan", "stan@example.com", "pw", is_staff=True)


def _as(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _grant(user, *codenames):
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # permissions are cached per object


@pytest.mark.parametrize("method, path, body", [
    ("post", "/api/mcp-servers/", SERVER),
    ("get", "/api/mcp-servers/", None),
    ("post", "/api/webhooks/", {"url": "https://hooks.example.com/in", "events": []}),
    ("get", "/api/webhooks/", None),
    ("get", "/api/webhook-deliveries/", None),
])
def test_staff_without_the_models_permissions_is_refused(stan, method, path, body):
    resp = getattr(_as(stan), method)(path, body, format="json")
    assert resp.status_code == 403, resp.content
    assert resp.json()["code"] == "permission_denied"


def test_the_permissions_the_admin_site_asks_for_open_the_api(stan):
    reader = _grant(stan, "view_webhookendpoint")
    assert _as(reader).get("/api/webhooks/").status_code == 200
    assert _as(reader).post("/api/webhooks/", {"url": "https://hooks.example.com/in"}, format="json").status_code == 403
    writer = _grant(stan, "add_webhookendpoint")
    assert _as(writer).post("/api/webhooks/", {"url": "https://hooks.example.com/in"}, format="json").status_code == 201


def test_a_refresh_asks_for_the_change_permission(stan, demo):
    from agents.mcp_servers.models import MCPServer

    MCPServer.objects.create(name="probe", transport="stdio", command="/bin/true")
    viewer = _grant(stan, "view_mcpserver", "add_mcpserver")
    assert _as(viewer).post("/api/mcp-servers/probe/refresh/").status_code == 403
    assert _as(demo["admin"]).get("/api/mcp-servers/").status_code == 200  # a superuser, as before
