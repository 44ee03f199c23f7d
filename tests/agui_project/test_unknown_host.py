"""A request for a Host the site does not serve is one WARNING line naming DJANGO_ALLOWED_HOSTS and the
Host: it was an ERROR of django.security.DisallowedHost with a 15-line traceback naming ALLOWED_HOSTS,
for each such request (internet scanners send them all day)."""

import logging

import pytest


@pytest.fixture
def allowed(settings):
    settings.ALLOWED_HOSTS = ["agui.example"]


def test_an_unknown_host_is_one_warning_line_naming_the_variable(client, allowed, caplog):
    with caplog.at_level(logging.INFO):
        response = client.get("/accounts/login/", HTTP_HOST="app.example.com")
    assert response.status_code == 400
    [record] = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert record.levelname == "WARNING" and record.exc_info is None
    line = record.getMessage()
    assert "DJANGO_ALLOWED_HOSTS" in line and "'app.example.com'" in line and "/accounts/login/" in line
    assert "\n" not in line and "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_known_host_logs_nothing_of_the_kind(client, allowed, caplog):
    with caplog.at_level(logging.INFO):
        client.get("/accounts/login/", HTTP_HOST="agui.example")
    assert not [r for r in caplog.records if r.name == "django.security.DisallowedHost"]


def test_what_the_client_sent_cannot_forge_a_line_or_colour_the_terminal(client, allowed, caplog):
    """The path arrives decoded: "%0d%0a" and "%1b" in it wrote a forged line and a raw ESC (the Host was
    written escaped, the path and the method not)."""
    with caplog.at_level(logging.INFO):
        client.get("/x%0d%0a[web]%202026-12-07%20ERROR%20django:%20FORGED%1b[31m", HTTP_HOST="evil\x1b.example")
    [record] = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    line = record.getMessage()
    assert "\r" not in line and "\n" not in line and "\x1b" not in line
    assert "/x\\r\\n[web]" in line and "\\x1b[31m" in line


def test_a_refused_sockets_path_is_written_escaped_too(caplog):
    from agui_project import sockets

    with caplog.at_level(logging.DEBUG, logger="agui_project.sockets"):
        sockets.tell_refusal("/ws/inbox/\r\nFORGED\x1b[31m", "Origin 'https://x' is not allowed (test)")
    line = caplog.records[-1].getMessage()
    assert "\n" not in line and "\x1b" not in line and "/ws/inbox/\\r\\nFORGED\\x1b[31m" in line
