"""Mail leaves through the server the environment names (DJANGO_EMAIL_*), and a backend that cannot
be loaded or a contradictory pair stops the start, naming the variable."""

import socket
import socketserver
import threading

import pytest

from tests.agui_project.test_settings_env import run_django

SEND = ("from django.core.mail import send_mail\n"
        "send_mail('Decide: transfer', 'body', 'inbox@example.com', ['finn@example.com'])\nprint('sent')")


class _SMTP(socketserver.StreamRequestHandler):
    """Just enough of RFC 5321 for smtplib: what the client says is kept on the server."""

    def reply(self, line):
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self):
        self.reply("220 test ESMTP")
        while line := self.rfile.readline():
            self.server.said.append(line.decode().rstrip())
            verb = line[:4].upper()
            if verb in (b"EHLO", b"HELO"):
                self.reply("250 test")
            elif verb == b"DATA":
                self.reply("354 go on")
                while (body := self.rfile.readline()) not in (b".\r\n", b""):
                    self.server.said.append(body.decode().rstrip())
                self.reply("250 queued")
            elif verb == b"QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("250 ok")


@pytest.fixture
def smtp_server():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SMTP)
    server.said = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_mail_goes_to_the_smtp_server_the_environment_names(smtp_server, tmp_path):
    out = run_django(SEND, AGUI_VAR_DIR=str(tmp_path), DJANGO_EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
                     DJANGO_EMAIL_HOST="127.0.0.1", DJANGO_EMAIL_PORT=str(smtp_server.server_address[1]))
    assert out.returncode == 0 and out.stdout.split() == ["sent"], out.stderr[-2000:]
    assert "mail FROM:<inbox@example.com>" in smtp_server.said and "rcpt TO:<finn@example.com>" in smtp_server.said
    assert any(line == "Subject: Decide: transfer" for line in smtp_server.said)


def test_a_silent_smtp_server_is_given_up_after_the_timeout(tmp_path):
    """Django's own default waits for ever: a server that never greets held the worker sending the mail."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        out = run_django(SEND, AGUI_VAR_DIR=str(tmp_path), DJANGO_EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
                         DJANGO_EMAIL_HOST="127.0.0.1", DJANGO_EMAIL_PORT=str(silent.getsockname()[1]),
                         DJANGO_EMAIL_TIMEOUT="0.5")
    assert out.returncode != 0 and "TimeoutError" in out.stderr, out.stderr[-2000:]


@pytest.mark.parametrize("env,says", [
    ({"DJANGO_EMAIL_BACKEND": "django.core.mail.backends.smpt.EmailBackend"},
     "DJANGO_EMAIL_BACKEND='django.core.mail.backends.smpt.EmailBackend' cannot be loaded"),
    ({"DJANGO_EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackends"},
     "DJANGO_EMAIL_BACKEND='django.core.mail.backends.smtp.EmailBackends' cannot be loaded"),
    ({"DJANGO_EMAIL_USE_TLS": "1", "DJANGO_EMAIL_USE_SSL": "1"}, "DJANGO_EMAIL_USE_TLS and DJANGO_EMAIL_USE_SSL are exclusive"),
    ({"DJANGO_EMAIL_PORT": "0"}, "DJANGO_EMAIL_PORT='0' must be at least 1"),
    ({"DJANGO_EMAIL_TIMEOUT": "0"}, "DJANGO_EMAIL_TIMEOUT='0' must be more than 0"),
])
def test_a_mail_setting_that_cannot_work_stops_the_start(env, says, tmp_path):
    out = run_django("", AGUI_VAR_DIR=str(tmp_path), **env)
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr and says in out.stderr


def test_the_mail_settings_read_from_the_environment(tmp_path):
    out = run_django("from django.conf import settings as s; print(s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_HOST_USER, "
                     "s.EMAIL_USE_TLS, s.EMAIL_USE_SSL, s.EMAIL_TIMEOUT, s.EMAIL_HOST_PASSWORD == 'p w')",
                     AGUI_VAR_DIR=str(tmp_path), DJANGO_EMAIL_HOST=" smtp.example.com ", DJANGO_EMAIL_PORT="587",
                     DJANGO_EMAIL_HOST_USER="inbox", DJANGO_EMAIL_HOST_PASSWORD="p w", DJANGO_EMAIL_USE_TLS="yes")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["smtp.example.com", "587", "inbox", "True", "False", "10.0", "True"]


@pytest.mark.parametrize("named,backend", [
    ("smtp", "django.core.mail.backends.smtp.EmailBackend"),
    ("filebased", "django.core.mail.backends.filebased.EmailBackend"),
    ("locmem", "django.core.mail.backends.locmem.EmailBackend"),
    ("console", "agui_project.console_mail.EmailBackend"),  # the printed mail with its links whole
    ("django.core.mail.backends.smtp.EmailBackend", "django.core.mail.backends.smtp.EmailBackend"),
])
def test_a_backend_is_named_by_its_short_name_or_its_dotted_path(named, backend, tmp_path):
    """The Configuration table says `filebased`: that word stopped every process ("doesn't look like a module path")."""
    out = run_django("from django.conf import settings\nprint(settings.EMAIL_BACKEND)", AGUI_VAR_DIR=str(tmp_path),
                     DJANGO_EMAIL_BACKEND=named, DJANGO_EMAIL_FILE_PATH=str(tmp_path / "mail"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [backend]
