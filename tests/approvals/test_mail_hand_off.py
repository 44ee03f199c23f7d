"""A request's mails go out from a task of their own (services.mail_later, tasks.mail_due): what
filed the request (a run's worker, an outside agent's HTTP request, a policy change) no longer waits
for the SMTP server. The run's side of it, with an SMTP server that never answers, is
tests/integration/test_slow_mail.py."""

import base64
import json

import kombu.exceptions
import pytest
from celery.canvas import Signature
from django.core import mail

from agents.runtime.events import redis_client
from approvals import services, tasks
from tests.conftest import TEST_QUEUE
from tests.inbox_helpers import make_request

pytestmark = [pytest.mark.django_db, pytest.mark.mail_by_task]


@pytest.fixture
def queue():
    redis_client().delete(TEST_QUEUE)
    mail.outbox.clear()
    yield
    redis_client().delete(TEST_QUEUE)


def _mail_tasks():
    """The mail tasks waiting in this session's queue, as (args) lists."""
    found = []
    for raw in redis_client().lrange(TEST_QUEUE, 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == services.MAIL_TASK:
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            found.append(args)
    return found


def test_a_requests_mail_is_a_task_that_sends_it(demo, queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("alice")  # finance decides: finn
    assert mail.outbox == []  # not sent by what filed the request
    assert _mail_tasks() == [["request", str(req.pk)]]
    tasks.mail_due(*_mail_tasks()[0])  # what the worker runs
    assert [m.to for m in mail.outbox] == [["finn@example.com"]]
    assert "Approval needed: transfer_money" in mail.outbox[0].subject and "/inbox/mail/" in mail.outbox[0].body


def test_a_request_decided_before_its_mail_went_out_is_not_mailed(demo, queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("alice")
    services.decide(req.pk, demo["finn"], "reject", feedback="no")
    tasks.mail_due(*_mail_tasks()[0])
    assert mail.outbox == []  # nobody is asked to decide what is decided


def test_a_reminder_and_an_escalation_are_tasks_too(demo, queue, django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from approvals.models import ApprovalRequest

    oncall = Group.objects.create(name="night shift")
    User.objects.create_user("otto", email="otto@example.com").groups.add(oncall)
    req = make_request("alice")
    past = timezone.now() - timedelta(seconds=1)
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=past, escalate_at=past, escalation_group=oncall)
    redis_client().delete(TEST_QUEUE)
    with django_capture_on_commit_callbacks(execute=True):
        services.process_deadlines(req.pk)
    queued = _mail_tasks()
    assert sorted(args[0] for args in queued) == ["escalation", "reminder"] and mail.outbox == []
    for args in queued:
        tasks.mail_due(*args)
    assert sorted(m.to[0] for m in mail.outbox) == ["finn@example.com", "otto@example.com"]


def test_with_the_broker_away_the_mail_is_sent_in_place(demo, queue, monkeypatch, django_capture_on_commit_callbacks):
    def away(self, *args, **kwargs):
        raise kombu.exceptions.OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(Signature, "apply_async", away)
    with django_capture_on_commit_callbacks(execute=True):
        make_request("alice")
    assert [m.to for m in mail.outbox] == [["finn@example.com"]]  # a mail is not lost for speed
