"""The inbox's agent filter (approvals.inbox.agent_names) for each kind of reader, in-process.

On the database bench/inbox_pages.py fills (run that first with --total 100000; its rows stay),
this adds what that seed lacks, once: escalations (every 50th finance request escalated to
support), a reviewer of one group (sam: support), a requester who also reviews (quinn: support,
who asked for 1,000 of the requests routed to their requester and 1,000 of finance's), and names
only some readers may see ("treasury-bot" on a few of finance's, "quinn-bot" on quinn's own
requests). Then it times, per reader, agent_names() and with --pages the inbox page's other reads
(the default page, everything visible, the title's count): median / p90 of --reps, in ms.

    DATABASE_URL=postgres://postgres@127.0.0.1/inbox_bench .venv/bin/python bench/inbox_pages.py --total 100000
    DATABASE_URL=postgres://postgres@127.0.0.1/inbox_bench .venv/bin/python bench/agent_names.py [--reps 30]

An empty database (a temporary SQLite file without DATABASE_URL) is filled first as inbox_pages.py
fills it (--total, default 100,000).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from datetime import timedelta
from pathlib import Path


def _inbox_pages():
    spec = importlib.util.spec_from_file_location("bench_inbox_pages", Path(__file__).with_name("inbox_pages.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extra_rows():
    """Escalations, quinn's and sam's rows and memberships, and the rarer names (idempotent)."""
    from django.contrib.auth.models import Group, User
    from django.db import connection, transaction
    from django.db.models import F

    from approvals.models import ApprovalRequest, ApproverKind

    if User.objects.filter(username="quinn").exists():
        return
    support, finance = Group.objects.get(name="support"), Group.objects.get(name="finance")
    with transaction.atomic():
        sam = User.objects.create(username="sam", email="sam@example.com")
        sam.groups.set([support])
        quinn = User.objects.create(username="quinn", email="quinn@example.com")
        quinn.groups.set([support])
        ids = list(ApprovalRequest.objects.order_by("created_at", "id").values_list("pk", "approver_group_id"))
        finance_ids = [pk for pk, group in ids if group == finance.pk]
        ApprovalRequest.objects.filter(pk__in=finance_ids[::50]).update(
            escalation_group=support, escalated_at=F("created_at") + timedelta(minutes=30))
        ApprovalRequest.objects.filter(pk__in=finance_ids[11::500]).update(agent_name="treasury-bot")
        # 1,000 of the requests routed to their requester, 1,000 of finance's
        own = [pk for pk, group in ids if group is None][::25]
        ApprovalRequest.objects.filter(pk__in=own + finance_ids[3::25]).update(requester=quinn)
        ApprovalRequest.objects.filter(pk__in=own, approver_kind=ApproverKind.REQUESTER).update(agent_name="quinn-bot")
    with connection.cursor() as cur:
        cur.execute("ANALYZE approvals_approvalrequest" if connection.vendor == "postgresql" else "ANALYZE")


def timed(fn, reps):
    fn()  # warm: compiled statements, the memberships' read
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.9) - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=int, default=100_000, help="rows to seed on a fresh SQLite file")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--pages", action="store_true", help="also time the inbox page's other reads")
    args = parser.parse_args()
    pages = _inbox_pages()
    pages.setup_django(reuse=True)
    from approvals.models import ApprovalRequest

    if not ApprovalRequest.objects.exists():  # a new database (a temporary SQLite file without DATABASE_URL)
        from django.core.management import call_command

        call_command("seed_demo", stdout=open(os.devnull, "w"))
        pages.seed(args.total, 1000)
    extra_rows()
    from django.contrib.auth.models import User
    from django.db import connection

    from approvals import inbox

    readers = {
        "admin": "admin",
        "reviewer of one group (sam: support)": "sam",
        "reviewer of two groups (finn: finance, reviewers)": "finn",
        "reviewer of two groups (rita: reviewers, support)": "rita",
        "plain requester (alice: no group)": "alice",
        "requester who reviews (quinn: support)": "quinn",
    }
    print(f"{connection.vendor} {connection.settings_dict['NAME']}: "
          f"{ApprovalRequest.objects.count()} requests, median / p90 of {args.reps}\n")
    print("| reader | names | agent_names ms |" + (" default page | all, page 1 | title count |" if args.pages else ""))
    print("|---|---|---|" + ("---|---|---|" if args.pages else ""))
    for label, username in readers.items():
        user = User.objects.get(username=username)
        names = inbox.agent_names(user=user)  # and the user's groups read once, as a page does
        reads = {"agent_names": lambda user=user: inbox.agent_names(user=user)}
        if args.pages:
            reads["default page"] = lambda user=user: inbox.page(user, inbox.InboxQuery())
            reads["all, page 1"] = lambda user=user: inbox.page(user, inbox.InboxQuery(scope="all", status="all"))
            reads["title count"] = lambda user=user: inbox.pending_mine_count(user)
        cells = [label, str(len(names))]
        for read in reads.values():
            median, p90 = timed(read, args.reps)
            cells.append(f"{median:.2f} / {p90:.2f}")
        print("| " + " | ".join(cells) + " |")
        if os.environ.get("BENCH_SHOW_NAMES"):
            print("   ", sorted(names))


if __name__ == "__main__":
    main()
