"""The stats chart's numbers as a table: one row per day (per hour for a day) with every outcome's
count, the same numbers the chart's bars draw in colour, as its description promises."""

import re

import inbox_e2e
from inbox_e2e import make_requests, run, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

SERIES = ["approved", "approved with edits", "rejected", "answered with guidance", "expired", "cancelled", "pending"]


def test_the_chart_has_a_table_of_its_numbers(people, live_stack):
    agent = tag()  # the page filtered to this agent: only this test's requests
    ids = make_requests(live_stack, [{"requester": "alice", "agent": agent} for _ in range(4)])
    run(live_stack, "from datetime import timedelta\nfrom django.utils import timezone\n"
                    "from tests.inbox_helpers import backdate\n"
                    f"ids = {ids!r}\n"
                    "ApprovalRequest.objects.filter(pk=ids[0]).update(status='approved')\n"
                    "ApprovalRequest.objects.filter(pk__in=ids[1:3]).update(status='rejected')\n"
                    "backdate(ApprovalRequest.objects.get(pk=ids[2]), created=timezone.now() - timedelta(days=2))\n")
    page = people("finn").page
    page.goto(f"/inbox/stats/?days=7&agent={agent}")
    expect(page.locator("#chart-desc")).to_contain_text("the table below the chart lists the numbers")
    page.locator("#chart-numbers summary").click()
    table = page.locator("#chart-table")
    expect(table).to_be_visible()
    assert [t.strip() for t in table.locator("thead th").all_text_contents()] == ["Day", *SERIES, "Requests"]

    rows = {}
    for row in table.locator("tbody tr").all():
        when = row.locator("th").inner_text()
        rows[when] = [int(n) for n in row.locator("td").all_inner_texts()]
    bars = page.locator("#stats-chart g.bar")
    assert len(rows) == bars.count() == 8  # the last 7 days from local midnight, today included

    # the chart's own numbers (its bars' titles, "Dec 5: 2 rejected") are the table's
    drawn = {}
    for title in page.locator("#stats-chart rect title").all_text_contents():
        when, n, label = re.fullmatch(r"(.+): (\d+) (.+)", title).groups()
        drawn.setdefault(when, {})[label] = int(n)
    for when, counts in rows.items():
        assert dict(zip(SERIES, counts[:-1], strict=True)) == {s: drawn.get(when, {}).get(s, 0) for s in SERIES}, when
        assert counts[-1] == sum(counts[:-1])

    # and what was made: today 1 approved, 1 rejected, 1 pending; two days ago 1 rejected
    whens = list(rows)
    today, two_days_ago = rows[whens[-1]], rows[whens[-3]]
    assert dict(zip(SERIES, today, strict=False)) == dict.fromkeys(SERIES, 0) | {"approved": 1, "rejected": 1, "pending": 1}
    assert dict(zip(SERIES, two_days_ago, strict=False)) == dict.fromkeys(SERIES, 0) | {"rejected": 1}
    assert sum(sum(c[:-1]) for c in rows.values()) == 4
