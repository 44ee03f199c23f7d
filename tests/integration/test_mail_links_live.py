"""One-click mail on the live stack (Daphne, Celery): an agent running elsewhere asks, the server
mails the reviewers (the filebased mail backend, read here), and finn's link decides through the
confirmation page's form (CSRF, not signed in), as the API then shows."""

import re
import time

import httpx
import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token

SCHEMA = {"type": "object", "required": ["email"], "properties": {"email": {"type": "string"}}}


@pytest.fixture
def live_stack_env(tmp_path):
    return {"DJANGO_EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            "DJANGO_EMAIL_FILE_PATH": str(tmp_path / "mail"), "AGUI_PUBLIC_URL": "http://public.example"}


def _mailed(folder, email, timeout=20.0):
    """The worker's mail task writes it after the 201: waited for, up to `timeout`."""
    deadline = time.monotonic() + timeout
    while (message := _mail_to(folder, email)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return message


def _mail_to(folder, email):
    for path in sorted(folder.glob("*.log")) if folder.exists() else []:
        for message in path.read_text().split("-" * 79)[:-1]:  # each one whole: its separator follows it
            if f"To: {email}" in message:
                return message
    return None


def test_a_mailed_link_decides_on_the_live_stack(live_stack, tmp_path):
    import os

    from django.contrib.auth.models import User

    call_command("seed_demo", stdout=open(os.devnull, "w"))
    alice = Token.objects.get_or_create(user=User.objects.get(username="alice"))[0].key
    api = httpx.Client(base_url=live_stack["url"], headers={"Authorization": f"Token {alice}"}, timeout=30)
    created = api.post("/api/approvals/", json={"tool_name": "crm.lookup", "arguments": {"email": "<b>x</b>"},
                                                "schema": SCHEMA, "description": "Look up <b>x</b> in the CRM"})
    assert created.status_code == 201, created.text
    approval = created.json()
    assert approval["status"] == "pending"

    message = _mailed(tmp_path / "mail", "finn@example.com")  # by a task the commit sends
    assert message and "Subject: [agui-inbox] Approval needed: crm.lookup" in message
    assert _mail_to(tmp_path / "mail", "alice@example.com") is None  # the requester is not asked
    link = re.search(r"^Approve: http://public\.example(/inbox/mail/\S+/)$", message, re.M).group(1)

    browser = httpx.Client(base_url=live_stack["url"], timeout=30)  # finn's phone: not signed in
    page = browser.get(link)
    assert page.status_code == 200 and "deciding as <strong>finn</strong>" in page.text
    assert "&lt;b&gt;x&lt;/b&gt;" in page.text and "<b>x</b>" not in page.text
    assert api.get(f"/api/approvals/{approval['id']}/").json()["status"] == "pending"  # a GET never decides

    forged = browser.post(link)  # no CSRF token: refused by Django before anything is decided
    assert forged.status_code == 403
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    done = browser.post(link, data={"csrfmiddlewaretoken": token}, headers={"Referer": live_stack["url"] + link})
    assert done.status_code == 200 and "Approved" in done.text
    answer = api.get(f"/api/approvals/{approval['id']}/").json()
    assert answer["status"] == "approved" and answer["decided_by"] == "finn", answer
    again = browser.post(link, data={"csrfmiddlewaretoken": token}, headers={"Referer": live_stack["url"] + link})
    assert again.status_code == 410
