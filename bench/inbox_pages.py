"""The inbox's queries at 100,000 requests: time per page, the query plans (issue 5), and the
stats page's figures.

Runs approvals.inbox.page() in-process (no HTTP: bench/run.py measures the pages end to end) on
a fresh database: a temporary SQLite file by default, or the PostgreSQL database DATABASE_URL
names (it is flushed: give it a database of its own, e.g. postgres://postgres@127.0.0.1/inbox_bench).

    .venv/bin/python bench/inbox_pages.py [--total 100000] [--pending 1000] [--reps 20]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup_django(reuse=False):
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='inbox-bench-')}/db.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if not reuse:
        call_command("flush", interactive=False, verbosity=0)
        call_command("seed_demo", stdout=open(os.devnull, "w"))


def seed(total, pending):
    from django.contrib.auth.models import Group, User
    from django.db import connection, transaction
    from django.db.models import F
    from django.utils import timezone

    from approvals.models import ApprovalRequest, ApproverKind

    rnd = random.Random(5)
    users = {u.username: u for u in User.objects.all()}
    groups = {g.name: g for g in Group.objects.all()}
    routes = [("group", groups["finance"]), ("group", groups["reviewers"]), ("group", groups["support"]),
              ("requester", None)]
    tools = ["transfer_money", "send_email", "delete_file", "submit_refund", "write_file", "cancel_subscription"]
    agents = ["banking", "ops", "support", "writer"]
    decided = [s for s in ApprovalRequest.Status.values if s != "pending"]
    now = timezone.now()
    made = 0
    while made < total:
        batch = []
        for i in range(min(5000, total - made)):
            index = made + i
            is_pending = index % (total // pending) == 0 if pending else False
            kind, group = routes[index % len(routes)]
            created = now - timedelta(seconds=index * 60 + rnd.randint(0, 59))
            amount = rnd.randint(1, 5000)
            batch.append(ApprovalRequest(
                id=str(uuid.uuid4()), status="pending" if is_pending else decided[index % len(decided)],
                tool_name=tools[index % len(tools)], agent_name=agents[index % len(agents)],
                arguments={"to_account": f"{rnd.randint(10**9, 10**10 - 1)}", "amount": amount},
                description=f"Transfer {amount}.00 USD request number {index}",
                risk=("low", "medium", "high", "critical")[index % 4],
                requester=users["alice" if index % 2 else "bob"],
                approver_kind=ApproverKind.GROUP if kind == "group" else ApproverKind.REQUESTER,
                approver_group=group, thread_ref=f"thread-{index % 5000}", context={},
                decided_at=None if is_pending else created + timedelta(seconds=rnd.randint(1, 600)),
                expires_at=created + timedelta(hours=1),
            ))
        ApprovalRequest.objects.bulk_create(batch)
        made += len(batch)
    # auto_now_add ignores given values: set created_at from the decision time in one statement
    with transaction.atomic():
        ApprovalRequest.objects.update(created_at=F("expires_at") - timedelta(hours=1))
    with connection.cursor() as cur:
        cur.execute("ANALYZE approvals_approvalrequest" if connection.vendor == "postgresql" else "ANALYZE")


def explain(qs):
    from django.db import connection

    sql, params = qs.query.sql_with_params()
    prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with connection.cursor() as cur:
        cur.execute(prefix + sql, params)
        return [str(row[-1]) for row in cur.fetchall()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--pending", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="keep the rows DATABASE_URL already has")
    args = parser.parse_args()
    setup_django(args.reuse)
    from django.contrib.auth.models import User
    from django.db import connection

    from approvals import inbox

    t0 = time.perf_counter()
    if not args.reuse:
        seed(args.total, args.pending)
    print(f"{connection.vendor} {connection.settings_dict['NAME']}: seeded {args.total} requests ({args.pending} pending) "
          f"in {time.perf_counter() - t0:.1f} s")
    finn, admin = User.objects.get(username="finn"), User.objects.get(username="admin")

    def deep_cursor(user, query, pages):
        after = ""
        for _ in range(pages):
            after = inbox.page(user, inbox.InboxQuery(**{**vars(query), "after": after})).next_after
        return after

    cases = {
        "finn: waiting for my groups (default)": (finn, inbox.InboxQuery()),
        "admin: all pending": (admin, inbox.InboxQuery(scope="all")),
        "admin: all, page 1": (admin, inbox.InboxQuery(scope="all", status="all")),
        "admin: decided, page 1": (admin, inbox.InboxQuery(scope="all", status="decided")),
        "finn: decided in my groups, page 1": (finn, inbox.InboxQuery(status="decided")),
        "admin: rejected, page 1": (admin, inbox.InboxQuery(scope="all", status="rejected")),
        "admin: decided, tool=send_email": (admin, inbox.InboxQuery(scope="all", status="decided", tool="send_email")),
        "admin: decided, agent=ops, high+critical": (
            admin, inbox.InboxQuery(scope="all", status="decided", agent="ops", risk="high,critical")),
        "admin: decided, older than 24 h": (admin, inbox.InboxQuery(scope="all", status="decided", age="gt24h")),
        "admin: search a word in many": (admin, inbox.InboxQuery(scope="all", status="all", q="Transfer")),
        "admin: search a thread name (substring)": (admin, inbox.InboxQuery(scope="all", status="all", q="thread-4711")),
        "admin: thread filter": (admin, inbox.InboxQuery(scope="all", status="all", thread="thread-4711")),
        "admin: search an argument (rare)": (admin, inbox.InboxQuery(scope="all", status="all", q="number 99999")),
    }
    deep = inbox.InboxQuery(scope="all", status="decided")
    cases["admin: decided, page 200 (cursor)"] = (admin, inbox.InboxQuery(
        scope="all", status="decided", after=deep_cursor(admin, deep, 199)))
    print("\n| query | rows | median ms | p90 ms |\n|---|---|---|---|")
    plans = {}
    for name, (user, query) in cases.items():
        times = []
        for _ in range(args.reps):
            t = time.perf_counter()
            result = inbox.page(user, query)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        print(f"| {name} | {len(result.rows)} | {statistics.median(times):.1f} | "
              f"{times[int(len(times) * 0.9) - 1]:.1f} |")
        # the plan of the rows query of the first segment
        qs = inbox.base(user, query)
        seg_qs, _ = inbox._segment_qs(qs, inbox._segments(query.status)[0], query.status)
        plans[name] = explain(seg_qs.values(*inbox.ROW_FIELDS)[:51])
    # the stats page's figures over the same rows (approvals/stats.py: grouped reads, percentiles here)
    from approvals import stats

    print("\n| stats | requests | median ms | p90 ms |\n|---|---|---|---|")
    for name, user, days in (("finn, 30 days (default)", finn, 30), ("admin, 30 days", admin, 30),
                             ("admin, 90 days", admin, 90), ("admin, 1 day (hourly)", admin, 1)):
        times = []
        for _ in range(max(3, args.reps // 2)):
            t = time.perf_counter()
            data = stats.compute(user, days=days)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        print(f"| {name} | {data['overall'].requests} | {statistics.median(times):.1f} | "
              f"{times[int(len(times) * 0.9) - 1]:.1f} |")
    print()
    for name, plan in plans.items():
        print(f"## {name}")
        for line in plan:
            print("   ", line)


if __name__ == "__main__":
    main()
