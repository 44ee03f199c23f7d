"""Database-side helpers of the benchmark, run as `python bench/djtasks.py CMD ...` with the stack's
environment. Each prints one JSON object on stdout.

    tokens                       API tokens of the demo users
    clone-paused --total N       top the paused runs up to N by cloning the rows of a real one
    counts                       runs by status, pending approvals
    seed-inbox --total N --pending P   N approval requests of which exactly P pending
    explain                      EXPLAIN of the inbox's queries, for finn (finance) and admin
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
from django.db.models import Count  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from agents.models import Message, Run, Thread, ToolCall  # noqa: E402
from approvals import services as approval_services  # noqa: E402
from approvals.models import ApprovalRequest, ApproverKind  # noqa: E402
from approvals.views import STATUS_FILTERS  # noqa: E402

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
                ApprovalRequest.objects.filter(id__in=chunk[j:j + 900]).update(
                    created_at=now - timedelta(days=b, minutes=rnd.randint(0, 1400)))
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("ANALYZE approvals_approvalrequest")
    else:
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
    return {"withdrawn": withdrawn, "created": made, "total": ApprovalRequest.objects.count(),
            "pending": ApprovalRequest.objects.filter(status=ApprovalRequest.Status.PENDING).count()}


def inbox_querysets(user):
    """The queries the inbox page runs (approvals/views.py inbox), per filter."""
    visible = approval_services.visible_to(user)
    out = {}
    for status, statuses in STATUS_FILTERS.items():
        qs = visible.filter(status__in=statuses) if statuses else visible
        out[f"page status={status}"] = qs.order_by("-created_at")[:50]
        out[f"count status={status}"] = qs
    out["pending_count"] = visible.filter(status=ApprovalRequest.Status.PENDING)
    return out


def explain(_args):
    plans = {}
    for username in ("finn", "admin"):
        user = User.objects.get(username=username)
        for name, qs in inbox_querysets(user).items():
            if name.startswith("count") or name == "pending_count":
                sql, params = qs.values("pk").query.sql_with_params()
                sql = f"SELECT COUNT(*) FROM ({sql}) sub"
            else:
                sql, params = qs.query.sql_with_params()
            prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
            with connection.cursor() as cur:
                cur.execute(prefix + sql, params)
                rows = cur.fetchall()
            plan = [" ".join(str(c) for c in row[-1:]) for row in rows]
            plans[f"{username}: {name}"] = plan
    return {"vendor": connection.vendor, "plans": plans}


COMMANDS = {"tokens": tokens, "counts": counts, "clone-paused": clone_paused, "seed-inbox": seed_inbox,
            "explain": explain}


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("--total", type=int, default=0)
    parser.add_argument("--pending", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(COMMANDS[args.command](args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
