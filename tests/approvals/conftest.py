"""Fixtures the approval tests share."""

import pytest
from django.core import mail

from approvals import notify
from tests.helpers import finance_member


@pytest.fixture
def fay(demo):
    """A second member of finance (finn is the demo's)."""
    return finance_member("fay", "fay@example.com")


@pytest.fixture
def told(demo, monkeypatch):
    """What the admins are told: admin@example.com mailed, the staff notices kept as [(kind, payload)]."""
    demo["admin"].email = "admin@example.com"
    demo["admin"].save()
    notices = []
    monkeypatch.setattr(notify, "operator_notice", lambda kind, payload: notices.append((kind, payload)))
    mail.outbox.clear()
    return notices
