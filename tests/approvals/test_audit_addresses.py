"""The reviewers' mail addresses a reminder or an escalation went to are the admins' to read: the API and
its CSV left them out for anyone else, but the console's audit page, its CSV and a request page's audit
panel showed them to the requester (rita, a reviewer herself, saw finn@example.com on her own request)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def reminded(demo, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("rita", group="finance")
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remind(req.pk)
    assert AuditEvent.objects.get(request=req, action="reminded").after["recipients"] == ["finn@example.com"]
    return req


@pytest.mark.parametrize("path", ["/audit/", "/audit/export.csv", "/inbox/{id}/", "/api/audit/?request={id}"])
def test_only_admins_read_where_the_mail_went(client, demo, reminded, path):
    url = path.format(id=reminded.pk)
    client.force_login(demo["rita"])
    mine = client.get(url)
    assert mine.status_code == 200
    body = b"".join(mine.streaming_content) if mine.streaming else mine.content
    assert b"reminded" in body.lower() and b"finn@example.com" not in body
    client.force_login(demo["admin"])
    admin = client.get(url)
    assert b"finn@example.com" in (b"".join(admin.streaming_content) if admin.streaming else admin.content)
