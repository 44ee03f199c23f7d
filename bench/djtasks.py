"""Database-side helpers of the benchmark, run as `python bench/djtasks.py CMD ...` with the stack's
environment. Each prints one JSON object on stdout.

    tokens                       API tokens of the demo users
    clone-paused --total N       top the paused runs up to N by cloning the rows of a real one
    counts                       runs by status, pending approvals
    seed-inbox --total N --pending P   N approval requests of which exactly P pending
    inbox-profile [--total REPS] [--paths P ...]   inbox pages rendered in-process: time, SQL, EXPLAIN
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import Case, Count, DateTimeField, Value, When  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from agents.models import Message, Run, Thread, ToolCall  # noqa: E402
from approvals.models import ApprovalRequest, ApproverKind  # noqa: E402

BATCH = 2000


def tokens(_args):
    return {u.username: Token.objects.get_or_create(user=u)[0].key for u in User.objects.all()}


def counts(_args):
    runs = dict(Run.objects.values_list("status").annotate(n=Count("pk")))
    pending = ApprovalRequest.objects.filter(status=ApprovalRequest.Status.PENDING).count()
    with connection.cursor() as cur:
        cur.execute("SELECT sqlite_version()" if connection.vendor == "sqlite" else "SHOW server_version")
        version = cur.fetchone()[0]
    return {"runs": runs, "pending_approvals": pending, "approvals": ApprovalRequest.objects.count(),
            "vendor": connection.vendor, "version": version}


def clone_paused(args):
    """Paused runs are rows: copy the rows of one real paused run (thread, user and assistant
    messages, the awaiting tool call, its pending request) until `total` runs are interrupted."""
    template = (Run.objects.filter(status=Run.Status.INTERRUPTED, tool_calls__status=ToolCall.Status.AWAITING_APPROVAL)
                .select_related("thread").order_by("-created_at").first())
    if template is None:
        raise SystemExit("no real paused run to copy")
    msgs = list(template.thread.messages.order_by("seq"))
    call = template.tool_calls.get()
    req = ApprovalRequest.objects.get(pk=call.approval_id)
    have = Run.objects.filter(status=Run.Status.INTERRUPTED).count()
    todo = max(0, args.total - have)
    made = 0
    while made < todo:
        n = min(BATCH, todo - made)
        threads, runs, messages, calls, requests = [], [], [], [], []
        for _ in range(n):
            t = Thread(id=str(uuid.uuid4()), owner_id=template.thread.owner_id, agent=template.thread.agent,
                       title=template.thread.title, message_seq=len(msgs))
            r = Run(id=str(uuid.uuid4()), thread=t, status=Run.Status.INTERRUPTED, stream_id=template.stream_id,
                    started_at=template.started_at, finished_at=template.finished_at)
            ids = {}
            for m in msgs:
                ids[m.pk] = str(uuid.uuid4())
                messages.append(Message(id=ids[m.pk], thread=t, run=r, seq=m.seq, role=m.role, content=m.content,
                                        tool_calls=m.tool_calls, tool_call_id=m.tool_call_id))
            ar = ApprovalRequest(
                id=str(uuid.uuid4()), **{f.attname: getattr(req, f.attname) for f in ApprovalRequest._meta.concrete_fields
                                         if f.attname not in ("id", "thread_ref", "run_ref", "tool_call_ref")},
                thread_ref=t.id, run_ref=r.id)
            c = ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", thread=t, run=r, message_id=ids[call.message_id],
                         name=call.name, raw_arguments=call.raw_arguments, arguments=call.arguments,
                         status=ToolCall.Status.AWAITING_APPROVAL, approval_id=ar.id)
            ar.tool_call_ref = c.id
            threads.append(t)
            runs.append(r)
            calls.append(c)
            requests.append(ar)
        with transaction.atomic():
            Thread.objects.bulk_create(threads)
            Run.objects.bulk_create(runs)
            Message.objects.bulk_create(messages)
            ApprovalRequest.objects.bulk_create(requests)
            ToolCall.objects.bulk_create(calls)
        made += n
    return {"cloned": made, "interrupted": Run.objects.filter(status=Run.Status.INTERRUPTED).count()}


def seed_inbox(args):
    """Exactly `pending` pending requests among `total`, spread over 90 days, three routes
    (finance, reviewers, the requester) and several requesters and tools."""
    rnd = random.Random(9)
    users = {u.username: u for u in User.objects.all()}
    groups = {g.name: g for g in Group.objects.filter(name__in=["finance", "reviewers"])}
    now = timezone.now()
    template = ApprovalRequest.objects.order_by("-created_at").first()
    with transaction.atomic():
        # what earlier scenarios left pending would skew "1,000 pending": withdraw it
        withdrawn = ApprovalRequest.objects.filter(status=ApprovalRequest.Status.PENDING).update(
            status=ApprovalRequest.Status.CANCELLED, decided_at=now)
    have = ApprovalRequest.objects.count()
    todo = max(0, args.total - have)
    decided = [s for s in ApprovalRequest.Status.values if s != ApprovalRequest.Status.PENDING]
    routes = [("group", groups["finance"]), ("group", groups["reviewers"]), ("requester", None)]
    made = 0
    while made < todo:
        n = min(BATCH, todo - made)
        batch = []
        for i in range(n):
            index = made + i
            pending = index < args.pending
            kind, group = routes[index % 3]
            requester = users["alice" if index % 2 else "bob"]
            amount = rnd.randint(1, 5000)
            args_ = {"from_account": "1234567890", "to_account": "0987654321", "amount": amount, "currency": "USD"}
            batch.append(ApprovalRequest(
                id=str(uuid.uuid4()), status=ApprovalRequest.Status.PENDING if pending else decided[index % len(decided)],
                tool_name=("transfer_money", "cancel_subscription", "check_balance")[index % 3],
                arguments=args_, schema=template.schema if template else {},
                description=f"Transfer {amount}.00 USD from 1234567890 to 0987654321",
                reason="bench", impact="bench", risk=("low", "medium", "high", "critical")[index % 4],
                requester=requester, approver_kind=ApproverKind.GROUP if kind == "group" else ApproverKind.REQUESTER,
                approver_group=group, thread_ref=f"bench-{index % 5000}", run_ref=f"bench-run-{index}",
                tool_call_ref=f"bench-call-{index}", context={},
                decided_at=None if pending else now,
            ))
        ApprovalRequest.objects.bulk_create(batch)
        made += n
    # auto_now_add overrides given values: spread the ages afterwards, a day bucket per UPDATE
    with transaction.atomic():
        qs = ApprovalRequest.objects.filter(reason="bench")
        ids = list(qs.values_list("id", flat=True))
        rnd.shuffle(ids)
        buckets = 90
        for b in range(buckets):
            chunk = ids[b::buckets]
            for j in range(0, len(chunk), 900):
                created = now - timedelta(days=b, minutes=rnd.randint(0, 1400))
                ApprovalRequest.objects.filter(id__in=chunk[j:j + 900]).update(
                    created_at=created,  # decided a few minutes after being asked
                    decided_at=Case(When(status=ApprovalRequest.Status.PENDING, then=Value(None)),
                                    default=Value(created + timedelta(minutes=7)), output_field=DateTimeField()))
    if connection.vendor == "postgresql":
        # the dated UPDATE above left a dead copy of every row: a live table of this size has been
        # vacuumed, and autovacuum must not start in the middle of the measurement
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE approvals_approvalrequest")
    else:
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
    return {"withdrawn": withdrawn, "created": made, "total": ApprovalRequest.objects.count(),
            "pending": ApprovalRequest.objects.filter(status=ApprovalRequest.Status.PENDING).count()}


def inbox_profile(args):
    """Server-side view of the inbox pages: the page rendered in-process (middleware, view,
    template; no network) `reps` times, and the SQL one rendering runs, each EXPLAINed."""
    import time

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    paths = args.paths or ["/inbox/?status=pending"]
    out = {}
    for username in ("finn", "admin"):
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(User.objects.get(username=username))
        for path in paths:
            for _ in range(3):
                client.get(path)
            times = []
            for _ in range(args.total or 50):
                t0 = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, (path, response.status_code)
            with CaptureQueriesContext(connection) as ctx:
                client.get(path)
            queries = []
            for q in ctx.captured_queries:
                sql = q["sql"]
                entry = {"ms": round(float(q["time"]) * 1000, 2), "sql": sql[:300]}
                if sql.lstrip().upper().startswith("SELECT") and "django_session" not in sql:
                    prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
                    with connection.cursor() as cur:
                        cur.execute(prefix + sql)
                        entry["plan"] = [" ".join(str(c) for c in row[-1:]) for row in cur.fetchall()]
                queries.append(entry)
            times.sort()
            out[f"{username} {path}"] = {
                "server_ms": {"n": len(times), "p50": round(times[len(times) // 2], 2),
                              "p95": round(times[int(len(times) * 0.95) - 1], 2)},
                "queries": len(queries), "sql_ms": round(sum(q["ms"] for q in queries), 2), "sql": queries,
            }
    return {"vendor": connection.vendor, "pages": out}


COMMANDS = {"tokens": tokens, "counts": counts, "clone-paused": clone_paused, "seed-inbox": seed_inbox,
            "inbox-profile": inbox_profile}


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("--total", type=int, default=0)
    parser.add_argument("--pending", type=int, default=0)
    parser.add_argument("--paths", nargs="*")
    args = parser.parse_args(argv)
    print(json.dumps(COMMANDS[args.command](args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
