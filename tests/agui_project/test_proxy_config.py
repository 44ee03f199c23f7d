"""The nginx configuration the README gives for several web processes ("Running several processes"),
held against what the site checks behind it.

Each of its `location` blocks is read from the README and turned into the headers nginx would send
for a browser on the public HTTPS address (with the default port, and with one of its own), then
given to the checks the web processes make: Django's CSRF origin check for a form (the login page)
and the WebSocket origin check (`agui_project.sockets.origin_refusal`). With the settings the README
asks for behind a TLS proxy (`AGUI_PROXY_SSL_HEADER=X-Forwarded-Proto`, the public name in
`DJANGO_ALLOWED_HOSTS`, nothing in `DJANGO_CSRF_TRUSTED_ORIGINS`) both must pass: a block that drops
the scheme made every chat and inbox socket a 403, one that drops the port every sign-in.
"""

import re
from pathlib import Path

import pytest
from django.middleware.csrf import CsrfViewMiddleware
from django.test import RequestFactory

from agui_project.sockets import origin_refusal

ROOT = Path(__file__).resolve().parents[2]


def readme_locations():
    """{path: {header: value}} of the README's nginx block (proxy_set_header lines per location)."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Running several processes"):]
    block = re.search(r"```nginx\n(.*?)```", section, re.S).group(1)
    locations = {}
    for path, body in re.findall(r"location\s+(\S+)\s*\{(.*?)\}", block, re.S):
        locations[path] = dict(re.findall(r"proxy_set_header\s+(\S+)\s+([^;]+);", body))
    return locations


def proxied(headers, public):
    """The headers nginx sends for a browser request to `public` (https://name[:port])."""
    name_port = public.split("://", 1)[1]
    variables = {"$http_host": name_port, "$host": name_port.split(":")[0], "$scheme": "https",
                 "$proxy_add_x_forwarded_for": "203.0.113.7", "$http_upgrade": "websocket"}
    return {k.lower(): variables.get(v.strip(), v.strip().strip('"')) for k, v in headers.items()}


@pytest.fixture
def behind_tls_proxy(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["agui.example"]
    settings.CSRF_TRUSTED_ORIGINS = []


def test_the_readme_gives_a_block_for_every_path_the_site_serves():
    assert {"/", "/ws/", "/agui/"} <= set(readme_locations())


@pytest.mark.parametrize("public", ["https://agui.example", "https://agui.example:8443"])
def test_a_socket_through_the_readme_proxy_passes_the_origin_check(behind_tls_proxy, public):
    headers = proxied(readme_locations()["/ws/"], public)
    scope = {"type": "websocket", "scheme": "ws", "path": "/ws/inbox/",
             "headers": [(k.encode(), v.encode()) for k, v in {**headers, "origin": public}.items()]}
    assert origin_refusal(scope) is None, headers


@pytest.mark.parametrize("location", ["/", "/agui/"])
@pytest.mark.parametrize("public", ["https://agui.example", "https://agui.example:8443"])
def test_a_form_through_the_readme_proxy_passes_the_csrf_origin_check(behind_tls_proxy, public, location):
    headers = proxied(readme_locations()[location], public)
    meta = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()}
    request = RequestFactory().post(location + "accounts/login/", HTTP_ORIGIN=public, **meta)
    assert request.is_secure(), headers
    assert CsrfViewMiddleware(lambda r: None)._origin_verified(request), headers
