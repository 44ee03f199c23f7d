"""The inbox list: the default view, filters, search, keyset pages, the live partial, and the query
plans the paging relies on at 100,000 requests."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.utils import timezone

from approvals import inbox, services
from approvals.models import ApprovalRequest
from tests.inbox_helpers import backdate, make_request, user

pytestmark = pytest.mark.django_db
ROW_ID = re.compile(rb'<tr data-approval-id="([^"]+)"')


def ids(resp):
    return [m.decode() for m in ROW_ID.findall(resp.content)]


def test_default_is_waiting_for_my_groups(login):
    mine = make_request("alice", group="finance", description="for finance")
    own = make_request("finn", group="finance", description="finn asked himself")  # four eyes: not his to decide
    other = make_request("alice", group="support", description="for support")
    done = make_request("alice", group="finance", description="already decided")
    services.decide(done.pk, user("finn"), "reject", feedback="no")
    client = login("finn")
    resp = client.get("/inbox/")
    assert ids(resp) == [mine.pk]
    assert b"(1) Inbox" in resp.content  # the title badge counts what waits for him
    assert set(ids(client.get("/inbox/?scope=all"))) == {mine.pk, own.pk}  # he sees his own, apart
    admin = login("admin")
    assert other.pk not in ids(admin.get("/inbox/"))  # admin's own groups (oncall) wait for nothing
    assert set(ids(admin.get("/inbox/?scope=all"))) == {mine.pk, own.pk, other.pk}


def test_rows_show_what_a_reviewer_needs(login):
    req = make_request("alice", risk="critical", timeout=600, description="Transfer 500.00 USD",
                       thread="thread-abc")
    body = login("finn").get("/inbox/").content.decode()
    row = body[body.index(f'data-approval-id="{req.pk}"'):]
    row = row[:row.index("</tr>")]
    for text in ("transfer_money", "banking", "Transfer 500.00 USD", "alice", "finance", "risk-critical",
                 'class="countdown"', "data-expires=", f'value="{req.pk}"', "thread-abc"):
        assert text in row, text


def test_status_filter_and_ordering(login):
    now = timezone.now()
    old = backdate(make_request("alice", description="old pending"), created=now - timedelta(hours=3))
    new = make_request("alice", description="new pending")
    first = make_request("alice", description="decided first")
    second = make_request("alice", description="decided second")
    services.decide(first.pk, user("finn"), "approve")
    services.decide(second.pk, user("finn"), "reject", feedback="no")
    backdate(first, decided=now - timedelta(minutes=10))
    backdate(second, decided=now - timedelta(minutes=5))
    client = login("finn")
    assert ids(client.get("/inbox/")) == [new.pk, old.pk]
    assert ids(client.get("/inbox/?status=decided")) == [second.pk, first.pk]  # recent decisions first
    assert ids(client.get("/inbox/?status=rejected")) == [second.pk]
    # pending first (newest first), then recent decisions
    assert ids(client.get("/inbox/?status=all")) == [new.pk, old.pk, second.pk, first.pk]


def test_filters_tool_agent_group_risk_age(login):
    now = timezone.now()
    transfer = make_request("alice", risk="high")
    email = make_request("alice", tool="send_email", agent="ops", group="reviewers", risk="medium")
    refund = backdate(make_request("bob", tool="submit_refund", agent="support", group="finance", risk="critical"),
                      created=now - timedelta(hours=30))
    client = login("finn")
    base = "/inbox/?scope=all&status=all"
    assert ids(client.get(base + "&tool=send_email")) == [email.pk]
    assert ids(client.get(base + "&agent=support")) == [refund.pk]
    assert set(ids(client.get(base + "&group=finance"))) == {transfer.pk, refund.pk}
    assert ids(client.get(base + "&group=reviewers")) == [email.pk]
    assert set(ids(client.get(base + "&risk=high,critical"))) == {transfer.pk, refund.pk}
    assert ids(client.get(base + "&risk=medium")) == [email.pk]
    assert ids(client.get(base + "&age=gt24h")) == [refund.pk]
    assert set(ids(client.get(base + "&age=lt24h"))) == {transfer.pk, email.pk}
    # unknown values fall back to the defaults instead of failing
    assert client.get("/inbox/?status=bogus&risk=nope&age=1y").status_code == 200


def test_search_description_arguments_thread_and_ids(login):
    by_desc = make_request("alice", description="Pay the plumber")
    by_args = make_request("alice", arguments={"from_account": "1234567890", "to_account": "5556667778",
                                               "amount": 12.5, "currency": "EUR"})
    by_thread = make_request("alice", thread="thread-needle-42")
    client = login("finn")
    base = "/inbox/?scope=all&status=all&q="
    assert ids(client.get(base + "PLUMBER")) == [by_desc.pk]
    assert ids(client.get(base + "5556667778")) == [by_args.pk]
    assert ids(client.get(base + "needle-42")) == [by_thread.pk]
    assert ids(client.get(base + by_args.pk)) == [by_args.pk]  # a pasted id: exact, indexed
    assert ids(client.get(base + "plumber+5556667778")) == []  # every word must match
    assert ids(client.get("/inbox/?scope=all&status=all&thread=thread-needle-42")) == [by_thread.pk]


def test_keyset_pages_cover_everything_once(login, monkeypatch):
    monkeypatch.setattr(inbox, "PAGE_SIZE", 7)
    monkeypatch.setattr(inbox.page, "__defaults__", (7,))
    now = timezone.now()
    made = []
    for i in range(12):
        made.append(backdate(make_request("alice", description=f"p{i}"), created=now - timedelta(minutes=i)))
    for i in range(9):
        r = make_request("alice", description=f"d{i}")
        services.decide(r.pk, user("finn"), "approve")
        made.append(backdate(r, decided=now - timedelta(seconds=i)))
    # two decided at the same instant: the id breaks the tie
    backdate(made[-1], decided=made[-2].decided_at)
    client = login("finn")
    seen, url, pages = [], "/inbox/?status=all", 0
    while url:
        resp = client.get(url)
        pages += 1
        seen += ids(resp)
        match = re.search(rb'href="/inbox/\?([^"]*after=[^"]+)" rel="next"', resp.content)
        url = "/inbox/?" + match.group(1).decode().replace("&amp;", "&") if match else None
    assert pages == 3 and len(seen) == 21 and len(set(seen)) == 21
    assert seen[:12] == [r.pk for r in made[:12]]  # pending newest first, then decisions
    assert set(seen[12:]) == {r.pk for r in made[12:]}


def _link(resp, rel):
    match = re.search(rb'href="/inbox/\?([^"]*)" rel="' + rel.encode() + b'"', resp.content)
    return "/inbox/?" + match.group(1).decode().replace("&amp;", "&") if match else None


@pytest.mark.parametrize("status,pending,decided", [("all", 12, 9), ("all", 14, 9), ("decided", 0, 17)])
def test_previous_pages_walk_back_to_the_same_pages(login, monkeypatch, status, pending, decided):
    """Next, next, next; then Previous all the way: the same pages, in reverse, across the pending /
    decided boundary (14 pending: a page ends exactly at it), and no Previous on the first page."""
    monkeypatch.setattr(inbox, "PAGE_SIZE", 7)
    monkeypatch.setattr(inbox.page, "__defaults__", (7,))
    now = timezone.now()
    for i in range(pending):
        backdate(make_request("alice", description=f"p{i}"), created=now - timedelta(minutes=i))
    made = []
    for i in range(decided):
        r = make_request("alice", description=f"d{i}")
        services.decide(r.pk, user("finn"), "approve")
        made.append(backdate(r, decided=now - timedelta(seconds=i)))
    backdate(made[-1], decided=made[-2].decided_at)  # a tie, broken by the id
    client = login("finn")
    forward, url = [], f"/inbox/?status={status}"
    while url:
        resp = client.get(url)
        forward.append(ids(resp))
        url = _link(resp, "next")
    assert sum(len(p) for p in forward) == pending + decided and len(forward) == -(-(pending + decided) // 7)
    assert _link(client.get(f"/inbox/?status={status}"), "prev") is None  # the first page has none

    backward, url = [ids(resp)], _link(resp, "prev")
    while url:
        resp = client.get(url)
        backward.append(ids(resp))
        url = _link(resp, "prev")
    assert backward == forward[::-1]
    assert _link(resp, "next")  # the first page, reached backwards, leads on again


@pytest.mark.parametrize("cursor", ["after=p|2026-13-01T00:00:00|x", "before=p|2026-02-30T00:00:00Z|x",
                                    "after=p|9999-12-31T23:59:59-23:59|x", "before=p|9999-12-31T23:59:59-23:59|x",
                                    "after=d|0001-01-01T00:00:00%2B01:00|x"])
@pytest.mark.parametrize("partial", ["", "&partial=rows"])
def test_a_mangled_cursor_shows_the_first_page(login, cursor, partial):
    # no such moment (month 13), or one in year 10000 once in UTC: ValueError and OverflowError, 500s
    req = make_request("alice")
    resp = login("finn").get(f"/inbox/?scope=all&status=all&{cursor.replace('|', '%7C')}{partial}")
    assert resp.status_code == 200 and ids(resp) == [req.pk]


def test_result_count_is_capped(login, monkeypatch):
    monkeypatch.setattr(inbox, "COUNT_CAP", 3)
    for _ in range(5):
        make_request("alice")
    resp = login("finn").get("/inbox/?partial=rows")
    assert resp["X-Result-Count"] == "3+" and resp["X-Pending-Count"] == "5"
    assert len(ids(resp)) == 5


def test_partial_rows_follow_the_filters(login):
    keep = make_request("alice", tool="send_email", group="finance")
    make_request("alice")
    resp = login("finn").get("/inbox/?tool=send_email&partial=rows")
    assert ids(resp) == [keep.pk] and b"<html" not in resp.content
    assert resp["X-Pending-Count"] == "2"


def test_summary_counts_and_says_whether_a_request_waits_for_me(login):
    finance = make_request("alice", group="finance")
    support = make_request("alice", group="support")
    client = login("rita")
    assert client.get("/inbox/summary/").json() == {"waiting": 1}
    assert client.get(f"/inbox/summary/?id={support.pk}").json() == {"waiting": 1, "for_me": True}
    assert client.get(f"/inbox/summary/?id={finance.pk}").json() == {"waiting": 1, "for_me": False}


def test_arguments_are_escaped_in_the_list(login):
    make_request("alice", description="<img src=x onerror=alert(1)>",
                 arguments={"from_account": "1234567890", "to_account": "<script>alert(1)</script>",
                            "amount": 1.0, "currency": "USD"})
    body = login("finn").get("/inbox/").content
    assert b"<img src=x" not in body and b"&lt;img src=x onerror=alert(1)&gt;" in body


# --- the query plans behind "fast at 100,000 requests" (bench/inbox_pages.py measures them) ------


def plan(qs):
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("EXPLAIN QUERY PLAN " + sql, params)
        return " | ".join(str(row[-1]) for row in cur.fetchall())


PAGE_PLANS = [
    ("admin", {"scope": "all"}, "approval_status_recent_idx"),
    ("finn", {}, "approval_status_recent_idx"),
    ("admin", {"scope": "all", "status": "decided"}, "approval_decided_recent_idx"),
    ("admin", {"scope": "all", "status": "rejected"}, "approval_status_decided_idx"),
    ("admin", {"scope": "all", "status": "decided", "tool": "send_email"}, "approval_tool_decided_idx"),
    ("admin", {"scope": "all", "status": "decided", "agent": "ops"}, "approval_agent_decided_idx"),
    # the few rows of one thread: found by the thread, then sorted (never a walk of every decision)
    ("admin", {"scope": "all", "status": "decided", "thread": "t-1"}, "approval_thread_idx"),
]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's EXPLAIN QUERY PLAN wording")
@pytest.mark.parametrize("who,params,index", PAGE_PLANS)
def test_pages_walk_an_index_in_order(demo, who, params, index):
    query = inbox.parse(params)
    qs = inbox.base(user(who), query)
    seg_qs, _ = inbox._segment_qs(qs, inbox._segments(query.status)[0], query.status)
    text = plan(seg_qs.values(*inbox.ROW_FIELDS)[:51])
    assert f"USING INDEX {index}" in text, text
    if "thread" not in params:  # a thread's few rows may be sorted; everything else is read in order
        assert "TEMP B-TREE" not in text, text


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's EXPLAIN wording")
@pytest.mark.parametrize("who,params,index", PAGE_PLANS)
def test_pages_walk_an_index_in_order_on_postgresql(demo, who, params, index):
    """The same plans on PostgreSQL. A test table is tiny, so the planner would rather scan and
    sort it: with both priced out it must find an index that yields the page's order itself."""
    query = inbox.parse(params)
    qs = inbox.base(user(who), query)
    seg_qs, _ = inbox._segment_qs(qs, inbox._segments(query.status)[0], query.status)
    sql, args = seg_qs.values(*inbox.ROW_FIELDS)[:51].query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        if "thread" not in params:  # a thread's few rows may be sorted
            cur.execute("SET LOCAL enable_sort = off")
        cur.execute("EXPLAIN " + sql, args)
        text = " | ".join(row[0] for row in cur.fetchall())
    assert f"using {index} on approvals_approvalrequest" in text, text
    if "thread" not in params:
        assert "Sort" not in text, text


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's EXPLAIN QUERY PLAN wording")
def test_a_later_page_starts_inside_the_index(demo):
    """The cursor bounds the index range (decided_at <= t), so page 2,000 costs what page 1 does."""
    query = inbox.InboxQuery(scope="all", status="decided", after=f"d|{timezone.now().isoformat()}|x")
    captured = []
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        inbox.page(user("admin"), query)
    captured = [q["sql"] for q in ctx.captured_queries if "decided_at" in q["sql"] and "LIMIT" in q["sql"]]
    assert captured
    with connection.cursor() as cur:
        cur.execute("EXPLAIN QUERY PLAN " + captured[0])
        text = " | ".join(str(r[-1]) for r in cur.fetchall())
    assert "approval_decided_recent_idx (decided_at>? AND decided_at<?)" in text, text
    assert ApprovalRequest.objects.count() == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's EXPLAIN wording")
def test_a_later_page_starts_inside_the_index_on_postgresql(demo):
    from django.test.utils import CaptureQueriesContext

    query = inbox.InboxQuery(scope="all", status="decided", after=f"d|{timezone.now().isoformat()}|x")
    with CaptureQueriesContext(connection) as ctx:
        inbox.page(user("admin"), query)
    captured = [q["sql"] for q in ctx.captured_queries if "decided_at" in q["sql"] and "LIMIT" in q["sql"]]
    assert captured
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL enable_sort = off")
        cur.execute("EXPLAIN " + captured[0])
        text = " | ".join(row[0] for row in cur.fetchall())
    assert "Index Scan using approval_decided_recent_idx on approvals_approvalrequest" in text, text
    assert "Index Cond: ((decided_at IS NOT NULL) AND (decided_at <=" in text, text  # the range, not a filter
    assert "Sort" not in text, text


def test_requester_routed_requests_wait_for_their_requester(login):
    own = make_request("rita", tool="send_email", group=None, description="rita confirms this herself")
    body = login("rita").get("/inbox/").content.decode()
    assert ids(login("rita").get("/inbox/")) == [own.pk] and f'value="{own.pk}"' in body  # she may decide it
    assert ids(login("finn").get("/inbox/?scope=all&status=all")) == []  # nobody else sees it
    assert ids(login("admin").get("/inbox/?scope=all")) == [own.pk]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's trigram indexes")
def test_a_searched_word_can_be_found_by_the_trigram_indexes_on_postgresql(demo):
    """`UPPER(col) LIKE '%WORD%'` on the description, the arguments and the thread id: each branch
    of the OR Django writes matches a GIN trigram index (approvals 0006) expression for expression,
    so PostgreSQL can OR three bitmaps instead of reading every row. Whether it does on a page at
    100,000 requests is bench/inbox_pages.py's to measure: a tiny test table is read whole."""
    make_request("alice", description="Pay the plumber")
    qs = inbox.base(user("admin"), inbox.parse({"scope": "all", "status": "all", "q": "plumber"}))
    sql, args = qs.order_by().values("id").query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("EXPLAIN " + sql, args)
        text = " | ".join(row[0] for row in cur.fetchall())
    assert "BitmapOr" in text, text
    for index in ("approval_search_desc_trgm", "approval_search_args_trgm", "approval_search_thread_trgm"):
        assert f"Bitmap Index Scan on {index}" in text, text


def test_a_request_one_has_approved_waits_for_the_others_not_for_one(login, demo):
    """finn's approval, 1 of 2, counted; the request stayed in his "waiting for me" list and the title's
    count once its undo window closed, until someone else approved."""
    req = make_request("alice", required=2, description="needs two")
    services.decide(req.pk, demo["finn"], "approve")
    finn = login("finn")
    assert "needs two" not in finn.get("/inbox/").content.decode()
    assert finn.get("/inbox/summary/").json()["waiting"] == 0
    assert "needs two" in finn.get("/inbox/?scope=all").content.decode()
    # an edit by another approver withdraws finn's approval: it waits for him again
    fay = User.objects.create_user("fay", email="fay@example.com")
    fay.groups.add(req.approver_group)
    services.decide(req.pk, fay, "approve", arguments={**req.arguments, "amount": 400.0})
    assert finn.get("/inbox/summary/").json()["waiting"] == 1


def test_a_second_account_of_the_requester_is_not_waited_for(login, demo):
    twin = User.objects.create_user("alice.fin", email="ALICE@example.com", password="pw")
    twin.groups.add(Group.objects.get(name="finance"))
    req = make_request("alice")
    client = login("finn")
    assert f"/inbox/{req.pk}/" in client.get("/inbox/").content.decode()
    client.force_login(twin)
    assert client.get("/inbox/summary/").json()["waiting"] == 0
    assert f"/inbox/{req.pk}/" not in client.get("/inbox/").content.decode()
