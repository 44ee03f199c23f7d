"""Run and ToolCall status changes, read from the maps their models declare.

The one writer of those statuses (tests/agui_project/test_structure.py checks that nothing else assigns
them). Every write is conditional on a status the map allows it to leave (`filter(status__in=...)
.update(...)`), so a process that lost its claim (a worker declared lost while it was stuck)
cannot write over what another decided: the call returns False and nothing changes. Asking for
a move the map does not allow is a programming error: it is logged and raises ValueError.
"""

import logging

from django.db import connections, router, transaction

from agui_project.queries import PreparedInsert, PreparedUpdate

from . import selectors
from .dispatch import announce_after_commit, note_stream
from .models import Run, Thread, ToolCall

log = logging.getLogger(__name__)


def sources(model, to, leaving=None):
    """The statuses `to` may be reached from (narrowed to `leaving` when given)."""
    allowed = {src for src, targets in model.TRANSITIONS.items() if to in targets}
    problem = None
    if leaving is not None:
        wrong = set(leaving) - allowed
        if wrong:
            problem = f"{model.__name__}: {', '.join(sorted(wrong))} -> {to} is not an allowed transition"
        allowed = set(leaving)
    if not allowed and problem is None:
        problem = f"{model.__name__}: nothing may become {to}"
    if problem:
        log.error("illegal status transition refused: %s", problem)
        raise ValueError(problem)
    return allowed


_moves = {}  # (model, statuses left, by thread) -> PreparedUpdate: a few dozen at most, one per call site's move


def _move(model, left, by_thread):
    key = (model, left, by_thread)
    move = _moves.get(key)
    if move is None:
        statuses = sorted(left)
        if by_thread:
            move = PreparedUpdate(model, lambda pk, thread: model.objects.filter(
                pk=pk, thread_id=thread, status__in=statuses), arity=2)
        else:
            move = PreparedUpdate(model, lambda pk: model.objects.filter(pk=pk, status__in=statuses))
        move = _moves.setdefault(key, move)
    return move


def move_run(run_id, to, leaving=None, **fields):
    """Run `run_id` -> `to`; False when it is no longer in a status that may become `to`."""
    return _move(Run, frozenset(sources(Run, to, leaving)), False).update(run_id, status=to, **fields) == 1


def claim_ahead(run_id, started, made=None):
    """claim_run()'s statement as (update, values, fields), for queries.read_ahead: sent in one round
    trip with the reads of what the worker claimed."""
    # the stream id a maker announced the run with (dispatch.announced(defer=True)) goes with the claim
    noted = {"stream_id": made.stream_id} if made is not None and made.stream_id else {}
    return (_move(Run, frozenset(sources(Run, Run.Status.RUNNING)), False), (run_id,),
            {"status": Run.Status.RUNNING, "started_at": started, **noted})


def claim_run(run_id, started, made=None):
    """A worker's claim: queued -> running (a second delivery of the run's task finds nothing to
    claim). `made`: the Run as its maker holds it, brought to what the claim wrote; the stream id
    it was announced with (dispatch.announced(defer=True)), not yet stored, is stored by the claim,
    one write fewer before the run starts, or on its own when there is nothing to claim."""
    update, values, fields = claim_ahead(run_id, started, made)
    if update.update(*values, **fields) != 1:
        if made is not None and made.stream_id:
            note_stream(run_id, made.stream_id)
        return False
    if made is not None:
        made.status, made.started_at = Run.Status.RUNNING, started
    return True


_CLAIMS = {}  # database alias -> the claim's SQL and the statuses it leaves (made once; psycopg prepares it)


def claim_call(call_id, run_id, now):
    """proposed|approved -> executing (attempts + 1) while run `run_id` is running and the chat's
    owner, whom tools act as, is an active account (one switched off since the run began, or since a
    reviewer approved the call, has nothing run as it), in one statement: True when claimed. On PostgreSQL the statement locks the run's row first (FOR
    UPDATE in its subquery), as recovery locks it to declare the run lost, so the two never cross;
    waiting for that lock, it sees the run as recovery left it. SQLite runs a statement as a write
    transaction of its own. Written as SQL because Django compiles no FOR UPDATE outside a
    transaction, and a transaction around one UPDATE costs a BEGIN and a COMMIT."""
    alias = router.db_for_write(ToolCall)
    connection = connections[alias]
    made = _CLAIMS.get(alias)
    if made is None:
        call, run, q = ToolCall._meta, Run._meta, connection.ops.quote_name
        thread, owner = Thread._meta, Thread._meta.get_field("owner").related_model._meta
        status, attempts = q(call.get_field("status").column), q(call.get_field("attempts").column)
        left = sorted(sources(ToolCall, ToolCall.Status.EXECUTING, ToolCall.CLAIMABLE))
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        made = _CLAIMS[alias] = (
            f"UPDATE {q(call.db_table)} SET {status} = %s, {q(call.get_field('claimed_at').column)} = %s, "
            f"{attempts} = {attempts} + 1 WHERE {q(call.pk.column)} = %s AND {status} IN "
            f"({', '.join(['%s'] * len(left))}) AND EXISTS (SELECT 1 FROM {q(run.db_table)} WHERE "
            f"{q(run.pk.column)} = %s AND {q(run.get_field('status').column)} = %s{lock}) "
            f"AND EXISTS (SELECT 1 FROM {q(thread.db_table)} INNER JOIN {q(owner.db_table)} ON "
            f"{q(owner.db_table)}.{q(owner.pk.column)} = {q(thread.db_table)}.{q(thread.get_field('owner').column)} "
            f"WHERE {q(thread.db_table)}.{q(thread.pk.column)} = {q(call.db_table)}.{q(call.get_field('thread').column)} "
            f"AND {q(owner.db_table)}.{q(owner.get_field('is_active').column)} = %s)"
        ), left
    sql, left = made
    claimed_at = ToolCall._meta.get_field("claimed_at").get_db_prep_save(now, connection)
    with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
        if getattr(connection, "lazy_commits", False):  # queries.lazy_commits(): said in its round trip
            connection.next_commits_lazily()
        cursor.execute(sql, [ToolCall.Status.EXECUTING, claimed_at, call_id, *left, run_id, Run.Status.RUNNING, True])
        return cursor.rowcount == 1


def move_call(call_id, to, leaving=None, thread=None, **fields):
    """ToolCall `call_id` (of `thread`, when given) -> `to`; False when it is no longer in a status
    that may become `to`."""
    move, keys, fields = move_call_ahead(call_id, to, leaving, thread, **fields)
    return move.update(*keys, **fields) == 1


def move_call_ahead(call_id, to, leaving=None, thread=None, **fields):
    """move_call()'s statement as (update, values, fields), for queries.read_ahead."""
    move = _move(ToolCall, frozenset(sources(ToolCall, to, leaving)), thread is not None)
    keys = (call_id,) if thread is None else (call_id, getattr(thread, "pk", thread))
    return move, keys, {"status": to, **fields}


def continue_run(paused_run, notices=(), continued=None):
    """Start the one continuation of a paused run (caller holds the run's row lock). `continued`:
    whether it has one, when the caller has read it under that lock (selectors.waiting_or_continued)."""
    if paused_run.status != Run.Status.INTERRUPTED:
        return None
    return start_continuation(paused_run, notices, continued)


# a new Run's INSERT compiled once (a message's run; a continuation, on the way of whoever decided)
RUN_ROWS = PreparedInsert(Run)


def start_continuation(parent, notices=(), continued=None):
    """The one continuation of `parent` (a paused run, or one that failed when its worker was
    lost): a queued Run under the client's chosen id (`resume_run_id`, AG-UI resume), announced
    on commit, after `notices` (dispatch.announce). None when it already has one. The caller
    holds `parent`'s row lock."""
    if continued is None:
        continued = selectors.has_continuation(parent.pk)
    if continued:
        return None
    # it goes with the COMMIT: a client's run id another request took meanwhile fails the caller's
    # transaction there as it would have here (nobody catches it: endpoint.check refused it if taken)
    run = RUN_ROWS.add(
        thread_id=parent.thread_id, parent_run=parent, forwarded_props=parent.forwarded_props,
        client_tools=parent.client_tools, context=parent.context,
        **({"id": parent.resume_run_id} if parent.resume_run_id else {}),
    )
    transaction.on_commit(lambda: announce_after_commit(run.pk, run, notices))  # the row as made: no read back
    return run
