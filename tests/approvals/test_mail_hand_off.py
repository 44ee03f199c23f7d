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
from approvals.models import MailDue
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
    [due] = MailDue.objects.all()
    assert (due.request_id, due.kind, due.args) == (req.pk, "request", [])  # written with the request
    assert _mail_tasks() == [[due.pk]]
    tasks.mail_due(*_mail_tasks()[0])  # what the worker runs
    assert [m.to for m in mail.outbox] == [["finn@example.com"]]
    assert "Approval needed: transfer_money" in mail.outbox[0].subject and "/inbox/mail/" in mail.outbox[0].body
    assert not MailDue.objects.exists()
    tasks.mail_due(*_mail_tasks()[0])  # delivered twice: sent once
    assert len(mail.outbox) == 1


def test_a_mail_whose_task_was_lost_is_sent_by_the_beat(demo, queue, django_capture_on_commit_callbacks):
    """The broker restarted without its queue after the request was filed: the mail went nowhere."""
    from datetime import timedelta

    from django.utils import timezone

    with django_capture_on_commit_callbacks(execute=True):
        make_request("alice")
    redis_client().delete(TEST_QUEUE)  # the task is lost
    tasks.mails_due()
    assert mail.outbox == []  # within the grace its task may still come
    MailDue.objects.update(created_at=timezone.now() - timedelta(seconds=services.MAIL_SWEEP_GRACE_SECONDS + 1))
    tasks.mails_due()
    assert [m.to for m in mail.outbox] == [["finn@example.com"]] and not MailDue.objects.exists()


def test_a_mail_the_smtp_server_refused_is_tried_again_then_given_up(demo, queue, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from approvals import mail as approval_mail

    with django_capture_on_commit_callbacks(execute=True):
        make_request("alice")

    def refused(*args):
        raise ConnectionRefusedError("SMTP away")

    monkeypatch.setattr(approval_mail, "deliver", refused)
    [due_id] = _mail_tasks()[0]
    for attempt in range(1, services.MAIL_ATTEMPTS + 1):
        tasks.mail_due(due_id)
        assert MailDue.objects.filter(pk=due_id).exists() == (attempt < services.MAIL_ATTEMPTS)
        assert not MailDue.objects.filter(pk=due_id).exclude(attempts=attempt).exists()
        tasks.mail_due(due_id)  # claimed: not tried again before its claim lapses
        MailDue.objects.update(claimed_until=timezone.now() - timedelta(seconds=1))


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
    kinds = sorted(MailDue.objects.get(pk=args[0]).kind for args in queued)
    assert kinds == ["escalation", "reminder"] and mail.outbox == []
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


def test_a_task_queued_by_the_previous_release_still_sends_its_mail(demo, queue):
    req = make_request("alice")
    mail.outbox.clear()
    tasks.mail_due("request", str(req.pk))  # (kind, request id): how tasks were queued before MailDue
    assert [m.to for m in mail.outbox] == [["finn@example.com"]]
