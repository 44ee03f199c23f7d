"""The mail `make run` prints is the development stack's mailbox. Reviewers' mail is sent from the
Celery worker, which turns what a task prints into log records, and the log handlers hide mail links'
tokens: the printed mail's Approve and Reject links read `/inbox/mail/[token]/`, so no link could be
followed. The console backend now writes to the process's own standard output, links whole; a log
line quoting such a link still hides its token."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# in a fresh process with the project's logging, stdout redirected as a Celery worker redirects it
CODE = """
import logging, sys
import django
django.setup()
from celery.utils.log import LoggingProxy
from django.core import mail
sys.stdout = LoggingProxy(logging.getLogger("celery.redirected"), logging.WARNING)
mail.send_mail("Approve?", "Approve: http://localhost:8000/inbox/mail/SeCrEtToKeN123/", None, ["finn@example.com"])
logging.getLogger("django.request").warning("Gone: /inbox/mail/OtHeRtOkEn456/")
"""


@pytest.mark.parametrize("named", ["", "django.core.mail.backends.console.EmailBackend"])
def test_the_printed_mail_keeps_its_links_and_the_log_hides_them(named, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_EMAIL_BACKEND"}
    env.update(DJANGO_SETTINGS_MODULE="agui_project.settings", AGUI_VAR_DIR=str(tmp_path), LOG_LEVEL="INFO",
               AGUI_SECRET_KEY_WARNED="1", **({"DJANGO_EMAIL_BACKEND": named} if named else {}))
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    printed = out.stdout + out.stderr
    assert "/inbox/mail/SeCrEtToKeN123/" in printed and "To: finn@example.com" in printed, printed
    assert "OtHeRtOkEn456" not in printed and "/inbox/mail/[token]/" in printed, printed
