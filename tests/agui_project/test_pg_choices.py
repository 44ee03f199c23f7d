"""agui_project/postgresql: a model's choices (Django's TextChoices / IntegerChoices, subclasses of
str / int) are dumped by psycopg with the dumper of the str / int they are, found at once."""

import pytest
from django.conf import settings
from django.db import connection
from psycopg.adapt import PyFormat

from agents.models import Run, ToolCall
from agui_project.postgresql.base import _choices
from approvals.models import ApprovalRequest

pytestmark = [
    pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                       reason="the suite runs on SQLite"),
    pytest.mark.django_db,
]


def test_every_choices_class_has_the_dumper_of_its_base_type_registered():
    connection.ensure_connection()
    adapters = connection.connection.adapters
    classes = [c for c in _choices() if issubclass(c, (str, int)) and c.__members__]
    assert {Run.Status, ToolCall.Status, ApprovalRequest.Status} <= set(classes)
    for cls in classes:
        base_type = str if issubclass(cls, str) else int
        # registered for the class itself: psycopg's lookup by exact class finds it
        assert cls in adapters._dumpers[PyFormat.AUTO], cls
        assert adapters.get_dumper(cls, PyFormat.AUTO) is adapters.get_dumper(base_type, PyFormat.AUTO)


def test_a_status_is_written_and_compared_as_its_text():
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::text, %s = 'running'", [Run.Status.RUNNING] * 2)
        value, same = cursor.fetchone()
    assert (value, same) == ("running", True)
