"""An audit export cut at its row limit says so: a `Link` header to the next download (the page also
says the limit by its button). A download of "the audit log" silently held only the newest 100,000 rows."""

import csv
import io
import re

import pytest

from approvals import exports
from approvals.models import AuditEvent

pytestmark = pytest.mark.django_db


def rows_of(response):
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))[1:]


def next_link(response):
    found = re.fullmatch(r'<([^>]+)>; rel="next"', response.get("Link", ""))
    return found.group(1) if found else None


@pytest.fixture
def events(monkeypatch, demo):
    monkeypatch.setattr(exports, "CSV_LIMIT", 3)
    for n in range(5):
        AuditEvent.objects.create(action="policy_changed", object_ref=f"policy:tool{n}", tool_name=f"tool{n}")
    return sorted(AuditEvent.objects.filter(tool_name__startswith="tool").values_list("pk", flat=True))


@pytest.mark.parametrize("path", ["/audit/export.csv?tool=", "/api/audit/?format=csv&tool="])
def test_a_cut_export_links_to_the_next_and_loses_no_row_between_them(admin_client, events, path):
    seen, pages = set(), 0
    for tool in ("tool0", "tool1", "tool2", "tool3", "tool4"):  # one tool a filter: a row each, nothing to cut
        response = admin_client.get(path + tool)
        assert response.status_code == 200 and next_link(response) is None
    response = admin_client.get(path.replace("tool=", "action=policy_changed"))
    while True:
        pages += 1
        got = rows_of(response)
        assert len(got) <= 3
        seen |= {int(r[0]) for r in got}
        link = next_link(response)
        if link is None:
            break
        assert "until=" in link and "action=policy_changed" in link
        response = admin_client.get(link)
        assert pages < 10
    assert pages >= 2
    assert set(events) <= seen


def test_the_page_says_the_limit_by_its_button(admin_client):
    page = admin_client.get("/audit/").content.decode()
    assert "An export holds the newest 100,000 events that match at most" in page
