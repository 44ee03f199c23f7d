"""The chat renders Markdown with vendored libraries: served from our origin, with their licences, no CDN."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
while not (ROOT / "manage.py").exists():  # wherever this file sits under tests/
    ROOT = ROOT.parent


@pytest.mark.django_db
def test_chat_page_scripts_are_our_own_and_served(client, demo):
    client.force_login(demo["alice"])
    page = client.get("/chat/").content.decode()
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', page)
    assert "/static/vendor/markdown-it/markdown-it.min.js" in scripts
    assert "/static/vendor/dompurify/purify.min.js" in scripts
    # the renderer wrapper comes after both libraries it uses
    assert scripts.index("/static/js/markdown.js") > scripts.index("/static/vendor/dompurify/purify.min.js")
    # same origin (CSP script-src 'self'): our static files and Django's JavaScript catalogue
    assert all(src.startswith("/static/") or src == "/jsi18n/" for src in scripts), scripts
    for src in scripts:
        resp = client.get(src)
        assert resp.status_code == 200 and "javascript" in resp["Content-Type"], src


def test_vendored_libraries_keep_their_licences():
    vendor = ROOT / "static" / "vendor"
    for folder in ("markdown-it", "dompurify"):
        assert (vendor / folder / "LICENSE").read_text().strip()
    assert b"new Function(" not in (vendor / "markdown-it" / "markdown-it.min.js").read_bytes()
