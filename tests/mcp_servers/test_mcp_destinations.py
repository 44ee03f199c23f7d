"""The SSRF guard on MCP servers over HTTP (agui_project/destinations.py): an internal address
outside AGUI_MCP_ALLOWED_NETWORKS is refused before anything is sent, and says so."""

import time

import pytest

from agents.mcp_servers import catalog, services
from agui_project import destinations

pytestmark = pytest.mark.django_db


def register(api, url):
    resp = api("admin").post("/api/mcp-servers/", {"name": "web", "transport": "http", "url": url,
                                                  "agents": ["notes"]}, format="json")
    assert resp.status_code == 201, resp.content
    return resp.json()


def test_a_server_on_loopback_is_refused_unless_loopback_is_allowed(api, notes_http, settings):
    settings.AGUI_MCP_ALLOWED_NETWORKS = []  # public addresses only
    data = register(api, notes_http)
    assert data["healthy"] is False
    assert data["error"].endswith("resolves to 127.0.0.1, an internal address (AGUI_MCP_ALLOWED_NETWORKS)")
    assert catalog.get("web__search") is None  # nothing offered

    settings.AGUI_MCP_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert api("admin").post("/api/mcp-servers/web/refresh/").json()["healthy"] is True
    assert "Renew the office lease" in catalog.get("web__search").run(None, {"query": "lease"})


def test_the_clouds_metadata_address_is_refused_by_default_at_once(api, settings):
    assert "169.254.0.0/16" not in settings.AGUI_MCP_ALLOWED_NETWORKS
    settings.AGUI_MCP_CONNECT_TIMEOUT = 10
    started = time.monotonic()
    data = register(api, "http://169.254.169.254/mcp")
    assert data["healthy"] is False and "169.254.169.254, an internal address" in data["error"]
    assert time.monotonic() - started < 5  # refused, not a connection left to time out
    assert services.save_server("web", {"url": "http://[::ffff:169.254.169.254]/mcp"}).error.endswith(
        "169.254.169.254, an internal address (AGUI_MCP_ALLOWED_NETWORKS)")


@pytest.mark.parametrize("url, allowed, refused", [
    ("http://8.8.8.8/", [], False),
    ("http://127.0.0.1/", [], True),
    ("http://127.0.0.1/", ["127.0.0.0/8"], False),
    ("http://10.2.3.4/", ["127.0.0.0/8"], True),
    ("http://100.64.0.1/", ["10.0.0.0/8"], True),  # shared address space: not global
    ("http://[::ffff:127.0.0.1]/", ["127.0.0.0/8"], False),  # judged as its IPv4 address
    ("http://[::ffff:127.0.0.1]/", ["::1/128"], True),
    ("http://[fe80::1]/", ["fc00::/7"], True),
    ("http://0.0.0.0/", [], True),
])
def test_what_is_internal(url, allowed, refused):
    assert (destinations.refused(url, allowed, "X") is not None) is refused
