"""The inbox's agent filter (inbox.agent_names): exactly the names of the requests a reader may see
(selectors.visible_requests), for every kind of reader, read in one statement along indexes."""

import re

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals import inbox, selectors
from approvals.access import memberships
from approvals.models import ApprovalRequest
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db
TABLE = ApprovalRequest._meta.db_table

# reader -> the names they may see, from the rows made by `rows` below
EXPECTED = {
    "admin": {"fin-bot", "sup-bot", "waits-bot", "escalated-bot", "alice-bot", "quinn-asks", "quinn-own",
              "odd-bot", "bob-bot"},
    "sam": {"sup-bot", "escalated-bot"},  # a reviewer of one group: support
    "finn": {"fin-bot", "waits-bot", "escalated-bot", "quinn-asks", "bob-bot"},  # finance + reviewers
    "rita": {"sup-bot", "escalated-bot", "bob-bot"},  # reviewers + support
    "alice": {"alice-bot"},  # a requester in no group: her own requests only
    "quinn": {"sup-bot", "escalated-bot", "quinn-asks", "quinn-own"},  # requests, and reviews for support
}


def _user(username, *groups):
    person = User.objects.create(username=username, email=f"{username}@example.com")
    person.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])
    return person


@pytest.fixture
def rows(demo):
    _user("sam", "support")
    _user("quinn", "support")
    make_request("bob", group="finance", agent="fin-bot")
    make_request("bob", group="support", agent="sup-bot")
    make_request("bob", group="reviewers", agent="bob-bot")
    # escalation: counts once escalated_at is set, not before
    waits = make_request("bob", group="finance", agent="waits-bot")
    escalated = make_request("bob", group="finance", agent="escalated-bot")
    support = Group.objects.get(name="support")
    ApprovalRequest.objects.filter(pk=waits.pk).update(escalation_group=support)
    ApprovalRequest.objects.filter(pk=escalated.pk).update(escalation_group=support, escalated_at=timezone.now())
    make_request("alice", group=None, agent="alice-bot")  # routed to its requester
    make_request("quinn", group="finance", agent="quinn-asks")  # her own, decided by a group she is not in
    make_request("quinn", group=None, agent="quinn-own")
    # a group on a request its requester decides: the group does not see it (approver_kind decides)
    odd = make_request("bob", group=None, agent="odd-bot")
    ApprovalRequest.objects.filter(pk=odd.pk).update(approver_group=support)
    make_request("bob", group="support", agent="")  # no name: never an option
    return {u.username: u for u in User.objects.all()}


def _visible_names(reader):
    return set(selectors.visible_requests(user=reader).exclude(agent_name="")
               .values_list("agent_name", flat=True).distinct())


@pytest.mark.parametrize("username", sorted(EXPECTED))
def test_the_agent_filter_lists_the_names_of_exactly_the_requests_one_may_see(rows, username):
    reader = rows[username]
    assert _visible_names(reader) == EXPECTED[username]  # the rows say what the test means
    assert inbox.agent_names(user=reader) == EXPECTED[username]


@pytest.mark.parametrize("username", sorted(EXPECTED))
def test_the_agent_filter_is_one_statement_for_every_reader(rows, username, django_assert_num_queries):
    # it stepped from name to name, one statement per name (and 40-50 ms each for a reviewer at
    # 100,000 requests on PostgreSQL: bench/agent_names.py)
    reader = rows[username]
    memberships(reader)  # read once per request by the page anyway
    with django_assert_num_queries(1):
        inbox.agent_names(user=reader)


def _reads(sql):
    """The plan's reads of the requests table, each with the bounds of its index."""
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            cur.execute("EXPLAIN QUERY PLAN " + sql)
            steps = [row[-1] for row in cur.fetchall()]
            return [step for step in steps if step.split(" ")[:2] in (["SEARCH", TABLE], ["SCAN", TABLE])]
        cur.execute("SET LOCAL enable_seqscan = off")  # a test's few rows: a table walk is cheaper
        cur.execute("EXPLAIN (COSTS OFF) " + sql)
        lines = [row[0].strip().removeprefix("->").strip() for row in cur.fetchall()]
        return [line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
                for i, line in enumerate(lines) if f" on {TABLE}" in line]


@pytest.mark.parametrize("username", sorted(EXPECTED))
def test_each_step_of_the_agent_filter_reads_one_index_entry(rows, username):
    # each probe is bounded by its key and the last name: it stops at the next name. A reviewer's
    # probe read every request of their groups (a multi-index OR, a bitmap) and sorted them, once per name
    reader = rows[username]
    memberships(reader)
    with CaptureQueriesContext(connection) as run:
        inbox.agent_names(user=reader)
    for query in run.captured_queries:
        reads = _reads(query["sql"])
        if connection.vendor == "sqlite":
            assert reads and all(r.startswith("SEARCH") and "agent_name>?" in r for r in reads), reads
        else:
            assert reads and all(r.startswith("Index") and re.search(r"Index Cond: .*agent_name(\)::text)? >", r)
                                 for r in reads), reads


def test_the_first_names_in_order_when_there_are_more_than_the_select_shows(rows):
    finn = rows["finn"]
    assert selectors.visible_agent_names(user=finn, limit=2) == ["bob-bot", "escalated-bot"]
    assert selectors.visible_agent_names(user=rows["admin"], limit=3) == ["alice-bot", "bob-bot", "escalated-bot"]
    assert selectors.visible_agent_names(user=rows["quinn"], limit=100) == sorted(EXPECTED["quinn"])


def test_many_names_of_one_group_each_listed_once(rows):
    sam = rows["sam"]
    for n in range(12):
        make_request("bob", group="support", agent=f"bot-{n:02d}")
        make_request("bob", group="support", agent=f"bot-{n:02d}")
    names = selectors.visible_agent_names(user=sam, limit=100)
    assert names == sorted(EXPECTED["sam"] | {f"bot-{n:02d}" for n in range(12)}) == sorted(_visible_names(sam))
