"""What a user of Django expects of a deployment: a Content-Security-Policy on every page, HTTPS
(redirect, HSTS, the proxy's header) by setting, `manage.py check --deploy` clean in production,
and settings that refuse a bad value instead of guessing."""

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
              "DJANGO_ALLOWED_HOSTS": "example.com", "AGUI_HTTPS": "1",
              "AGUI_PROXY_SSL_HEADER": "X-Forwarded-Proto", "AGUI_PUBLIC_URL": "https://example.com",
              "DJANGO_DEFAULT_FROM_EMAIL": "agui-inbox <inbox@example.com>",  # else the product's deploy checks warn
              "DJANGO_EMAIL_BACKEND": "smtp", "DJANGO_EMAIL_HOST": "mail.example.com"}


def policy(response):
    header = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in header.split(";") if d.strip()}


@pytest.mark.django_db
@pytest.mark.parametrize("user,path", [(None, "/accounts/login/"), ("alice", "/chat/"), ("finn", "/inbox/"),
                                       ("admin", "/policies/"), ("admin", "/admin/")])
def test_pages_send_a_strict_content_security_policy(client, demo, user, path):
    if user:
        client.force_login(demo[user])
    resp = client.get(path)
    assert resp.status_code == 200
    csp = policy(resp)
    assert csp["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no other host
    assert csp["style-src"] == ["'self'"]
    assert csp["default-src"] == ["'self'"] and csp["object-src"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"] and csp["base-uri"] == ["'none'"]


INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "an inline event handler"),
    (re.compile(r"\sstyle\s*=", re.I), "a style attribute"),
    (re.compile(r"javascript:", re.I), "a javascript: URL"),
]


def test_templates_have_nothing_the_policy_would_block():
    """Inline code and styles would be blocked by script-src/style-src 'self' (json_script's
    <script type="application/json"> is data, never run, and is allowed)."""
    found = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for pattern, what in INLINE:
            for m in pattern.finditer(text):
                found.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {what}")
    assert not found, found


def run_django(code, **env):
    """`code` in a fresh process with these settings (they are read from the environment at start)."""
    full = {**os.environ, "DJANGO_SETTINGS_MODULE": "agui_project.settings", **env}
    out = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=ROOT, env=full,
                         capture_output=True, text=True, timeout=120)
    return out


def test_https_settings_redirect_and_send_hsts(tmp_path):
    code = """
import json
from django.conf import settings
from django.test import Client
c = Client(HTTP_HOST="example.com")
plain = c.get("/accounts/login/")
behind_proxy = c.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
probe = c.get("/healthz")
print(json.dumps({"redirect": [plain.status_code, plain.get("Location")],
                  "https": [behind_proxy.status_code, behind_proxy.get("Strict-Transport-Security")],
                  "probe": probe.status_code, "csp": behind_proxy.get("Content-Security-Policy"),
                  "proxy_header": list(settings.SECURE_PROXY_SSL_HEADER)}))
"""
    out = run_django(code, **PRODUCTION, AGUI_VAR_DIR=str(tmp_path),
                     DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["redirect"] == [301, "https://example.com/accounts/login/"]
    assert got["https"] == [200, "max-age=31536000; includeSubDomains"]
    assert got["probe"] != 301  # a load balancer probes over plain HTTP
    assert "upgrade-insecure-requests" in got["csp"]
    assert got["proxy_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_https_is_off_by_default():
    out = run_django("from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, "
                     "getattr(s, 'SECURE_PROXY_SSL_HEADER', None))",
                     AGUI_HTTPS="", AGUI_PROXY_SSL_HEADER="", DJANGO_SECURE_SSL_REDIRECT="",
                     DJANGO_SECURE_HSTS_SECONDS="")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "0", "None"]


def test_check_deploy_is_clean_in_production_settings(tmp_path):
    env = {**os.environ, **PRODUCTION, "AGUI_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "agui_project.settings"}
    out = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "System check identified no issues" in out.stdout
    assert "WARNINGS" not in out.stdout + out.stderr


@pytest.mark.parametrize("name,value,says", [
    ("AGUI_HTTPS", "maybe", "AGUI_HTTPS='maybe' is not a boolean"),
    ("AGUI_TOKEN_TTL_SECONDS", "a week", "AGUI_TOKEN_TTL_SECONDS='a week' is not an integer"),
    ("AGUI_TRUSTED_PROXIES", "10.0.0.1, proxy.local", "AGUI_TRUSTED_PROXIES"),
])
def test_a_bad_setting_stops_the_start(name, value, says, tmp_path):
    out = run_django("", **{name: value}, AGUI_VAR_DIR=str(tmp_path))
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr and says in out.stderr
