"""agui_project.queries.one: a row by its key, without the ORDER BY that first() adds."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Thread
from agents.services import create_thread
from agui_project.queries import one

pytestmark = pytest.mark.django_db


def test_one_reads_the_row_or_none_without_ordering(demo):
    thread = create_thread(demo["alice"], "banking")
    with CaptureQueriesContext(connection) as sql:
        assert one(Thread.objects.filter(pk=thread.pk)) == thread
        assert one(Thread.objects.filter(pk="no-such-thread")) is None
        assert one(Thread.objects.filter(pk=thread.pk).values_list("agent", flat=True)) == "banking"
    assert len(sql.captured_queries) == 3
    assert not any("ORDER BY" in q["sql"] for q in sql.captured_queries)
    assert all("LIMIT 1" in q["sql"] for q in sql.captured_queries)
