"""The nginx configuration the README gives for several web processes ("Running several processes"),
held against what the site checks behind it.

Each of its `location` blocks is read from the README and turned into the headers nginx would send
for a browser on the public HTTPS address (with the default port, and with one of its own), then
given to the checks the web processes make: Django's CSRF origin check for a form (the login page)
and the WebSocket origin check (`agui_project.sockets.origin_refusal`). With the settings the README
asks for behind a TLS proxy (`AGUI_PROXY_SSL_HEADER=X-Forwarded-Proto`, the public name in
`DJANGO_ALLOWED_HOSTS`, nothing in `DJANGO_CSRF_TRUSTED_ORIGINS`) both must pass: a block that drops
the scheme made every chat and inbox socket a 403, one that drops the port every sign-in.

Beyond those checks: the block must be a configuration nginx takes as pasted (`upstream` inside a
`server` was refused), must keep a one-click mail link's path out of its access log (that path alone
decides a request), must let a body just over AGUI_MAX_BODY_BYTES through to the site's JSON 413, and
must close requests for a Host that is not the site's.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.middleware.csrf import CsrfViewMiddleware
from django.test import RequestFactory

from agui_project.sockets import origin_refusal

ROOT = Path(__file__).resolve().parents[2]


def readme_block():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Running several processes"):]
    return re.search(r"```nginx\n(.*?)```", section, re.S).group(1)


def location_bodies():
    """{path: the text between its braces} of the README's nginx block."""
    return dict(re.findall(r"location\s+(\S+)\s*\{(.*?)\}", readme_block(), re.S))


def readme_locations():
    """{path: {header: value}} of the README's nginx block (proxy_set_header lines per location)."""
    return {path: dict(re.findall(r"proxy_set_header\s+(\S+)\s+([^;]+);", body))
            for path, body in location_bodies().items()}


def nginx_picks(path):
    """The location nginx serves `path` from: the longest matching prefix (the block has no regex ones)."""
    return max((p for p in location_bodies() if path.startswith(p)), key=len)


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
    assert {"/", "/ws/", "/agui/", "/inbox/mail/"} <= set(readme_locations())


def test_a_mail_links_token_is_not_written_to_the_proxys_access_log():
    """nginx's default `combined` log writes the whole path, and /inbox/mail/<token>/ alone decided a
    transfer as its recipient, with no sign-in, for anyone reading that log."""
    body = location_bodies()[nginx_picks("/inbox/mail/eyJuIjoiN0JPQUEt:1xaUSo:c6RoZkzQ/")]
    assert re.search(r"\baccess_log\s+off\s*;", body), body
    # and it reaches the site as "/" does (CSRF origin check of its confirmation form: below)
    assert readme_locations()["/inbox/mail/"] == readme_locations()["/"]


def test_the_proxy_lets_a_body_just_over_the_limit_through_to_the_sites_json_413(settings):
    """At exactly AGUI_MAX_BODY_BYTES nginx answered its own HTML 413, never the documented JSON one."""
    units = {"": 1, "k": 1024, "m": 1024 ** 2}
    server = readme_block()
    for path, body in location_bodies().items():
        size = re.search(r"client_max_body_size\s+(\d+)([km]?)\s*;", body, re.I) or \
            re.search(r"client_max_body_size\s+(\d+)([km]?)\s*;", re.sub(r"location[^{]*\{.*?\}", "", server, flags=re.S))
        assert size, f"{path}: no client_max_body_size (nginx's default is 1m)"
        assert int(size.group(1)) * units[size.group(2).lower()] > settings.AGUI_MAX_BODY_BYTES, path


def test_the_block_is_whole_and_closes_unknown_hosts():
    """`upstream` at http level (nginx refuses it in a server), the site in a TLS server of its own
    name, and a default server that drops any other Host before Django logs it."""
    block = readme_block()
    assert block.lstrip().startswith("upstream ")  # not inside a server
    servers = re.findall(r"^server\s*\{(.*?)^\}", block, re.S | re.M)
    default = [s for s in servers if "default_server" in s]
    assert default and all(re.search(r"\breturn\s+444\s*;", s) for s in default)
    assert any(re.search(r"listen\s+443\s+ssl\s*;", s) and "server_name" in s and "ssl_certificate " in s
               and "location /" in s for s in servers)


def test_nginx_takes_the_block_as_pasted(tmp_path):
    """`nginx -t` on the README's block inside an http {} of a minimal configuration. Skipped where nginx
    is not installed; CI's machine has no nginx either, so CI skips it too (the tests above still hold
    the block's shape there)."""
    nginx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None)
    if not nginx:
        pytest.skip("nginx is not installed (apt-get install nginx); not on CI's machine either")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=agui.example",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
                   check=True, capture_output=True)
    block = readme_block().replace("/etc/ssl/agui.example.crt", str(tmp_path / "cert.pem")) \
        .replace("/etc/ssl/agui.example.key", str(tmp_path / "key.pem"))
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\naccess_log {tmp_path}/access.log;\n{block}\n}}\n")
    out = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("public", ["https://agui.example", "https://agui.example:8443"])
def test_a_socket_through_the_readme_proxy_passes_the_origin_check(behind_tls_proxy, public):
    headers = proxied(readme_locations()["/ws/"], public)
    scope = {"type": "websocket", "scheme": "ws", "path": "/ws/inbox/",
             "headers": [(k.encode(), v.encode()) for k, v in {**headers, "origin": public}.items()]}
    assert origin_refusal(scope) is None, headers


@pytest.mark.parametrize("location", ["/", "/agui/", "/inbox/mail/"])
@pytest.mark.parametrize("public", ["https://agui.example", "https://agui.example:8443"])
def test_a_form_through_the_readme_proxy_passes_the_csrf_origin_check(behind_tls_proxy, public, location):
    headers = proxied(readme_locations()[location], public)
    meta = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()}
    request = RequestFactory().post(location + "accounts/login/", HTTP_ORIGIN=public, **meta)
    assert request.is_secure(), headers
    assert CsrfViewMiddleware(lambda r: None)._origin_verified(request), headers
