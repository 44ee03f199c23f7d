"""The beat's sweeps read only the runs not yet over (`run_unfinished_idx`): each read every run
ever made (a table walk, no index on the status), every 2-30 s, so their cost grew with a
deployment's age (0.18 s a cycle at 300,000 runs on SQLite)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import account_off, services
from agents.models import Run
from agents.runtime import execution

pytestmark = pytest.mark.django_db
TABLE = "agents_run"


def _reads_of_runs(sql):
    """(the plan's reads of the runs table, each with the bounds of its index (PostgreSQL: the next
    line), the whole plan)."""
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            cur.execute("EXPLAIN QUERY PLAN " + sql)
            steps = [row[-1] for row in cur.fetchall()]
            return [s for s in steps if s.split(" ")[:2] in (["SEARCH", TABLE], ["SCAN", TABLE])], " ".join(steps)
        cur.execute("SET LOCAL enable_seqscan = off")  # a test's few rows: a table walk is cheaper
        cur.execute("EXPLAIN (COSTS OFF) " + sql)
        lines = [row[0].strip().removeprefix("->").strip() for row in cur.fetchall()]
        return [line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
                for i, line in enumerate(lines) if f" on {TABLE}" in line], " ".join(lines)


def _bounded(read):
    """A read of the unfinished runs' index, or a lookup by a key (a join's): not a walk of every run.
    (A bitmap heap scan reads what its index scans found, which carry their own conditions.)"""
    if "run_unfinished_idx" in read or read.startswith("Bitmap Heap Scan"):
        return True
    return read.startswith("SEARCH") if connection.vendor == "sqlite" else "Index Cond" in read


def test_each_sweep_reads_the_unfinished_runs_by_their_index(demo):
    thread = services.create_thread(demo["alice"], "banking")
    Run.objects.bulk_create([Run(thread=thread, status=Run.Status.SUCCEEDED) for _ in range(40)])
    for status in (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.INTERRUPTED):
        Run.objects.create(thread=thread, status=status)  # just made: no sweep acts on them
    with CaptureQueriesContext(connection) as seen:
        execution.recover_stuck_runs()
        services.announce_unannounced()
        execution.requeue_lost_runs()
        services.resume_stalled()
        account_off.sweep()
    sweeps = [q["sql"] for q in seen.captured_queries
              if f'FROM "{TABLE}"' in q["sql"] and '"status" = ' in q["sql"] and q["sql"].startswith("SELECT")]
    assert len(sweeps) >= 5, sweeps
    for sql in sweeps:
        reads, plan = _reads_of_runs(sql)
        assert "run_unfinished_idx" in plan and reads and all(map(_bounded, reads)), (sql, plan)
