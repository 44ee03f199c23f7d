"""Statements that go to PostgreSQL in the round trip of the next one: a transaction's BEGIN, and
writes whose answer nobody reads.

With autocommit off, psycopg opens each transaction by sending BEGIN and waiting for its answer
before it sends the first statement, in pipeline mode too (it syncs after the BEGIN): a round trip
of its own, ~0.1-0.2 ms here, on every transaction.atomic() (a decision, a resume, a tool's result
and its message each pay one on the way of the person waiting). Here psycopg's autocommit stays on
and a transaction Django opens is only noted on the connection (DatabaseWrapper._set_autocommit):
its BEGIN waits, queued, for the first statement, and goes with it in one pipeline (or ahead of it
in the pipeline already open: queries.read_ahead). Inside a transaction a write whose answer (a
count, a key) nobody reads is queued the same way (queries.unanswered): the audit row of a
decision, the change of a row the transaction holds locked, a row whose key its maker drew. It goes
ahead of the next statement, or of the COMMIT, in that one's round trip, in the order written; an
error it meets is raised there and fails the transaction as it would have. A read after it sees it.

A statement without parameters may be several (a migration's), which only the simple protocol
takes, outside a pipeline: what is queued then goes in a round trip of its own first, as it does
before executemany(), COPY and a named cursor's DECLARE. ROLLBACK is psycopg's own (it ends a
transaction the server has open whatever its autocommit says; one whose BEGIN was never sent has
nothing to end, and its queued writes are dropped).
"""

from contextlib import contextmanager, nullcontext

from django.db.backends.postgresql import base

BEGIN = b"BEGIN"
# this transaction's COMMIT does not wait for its WAL to reach the disk (queries.commit_lazily)
LAZY = b"SET LOCAL synchronous_commit TO OFF"
# the same for the statements of a pipeline in autocommit (one implicit transaction until its sync)
LAZY_ROUND_TRIP = b"SELECT set_config('synchronous_commit', 'off', true)"
COMMIT = b"COMMIT"
_OPENING = (BEGIN, LAZY)  # what a transaction's first round trip opens it with: not a write


def _queued(connection):
    return connection.__dict__.setdefault("_agui_ahead", [])


def note_begin(connection, pending):
    """A transaction is open from Django's side (its BEGIN queued), or none is: nothing queued."""
    connection._agui_ahead = [(BEGIN, None)] if pending else []


def begin_pending(connection):
    queued = _queued(connection)
    return bool(queued) and queued[0][0] is BEGIN


def writes_pending(connection):
    """Whether the COMMIT has something to carry: a write, or in a transaction already open its SET LOCAL."""
    if begin_pending(connection):
        return any(sql not in _OPENING for sql, _params in _queued(connection))
    return bool(_queued(connection))


def commit_lazily(connection):
    """The transaction open on `connection` commits without waiting for the WAL's flush: said with
    its BEGIN when that is not sent yet, else with the next statement (or the COMMIT)."""
    if begin_pending(connection):
        _queued(connection).insert(1, (LAZY, None))
    else:
        _queued(connection).append((LAZY, None))


def next_commits_lazily(connection):
    """In autocommit: the next statement's own transaction commits without waiting for the flush
    (said ahead of it, in its round trip)."""
    _queued(connection).append((LAZY_ROUND_TRIP, None))


@contextmanager
def defer(connection):
    """The statements run on `connection` inside the block are queued (see the module)."""
    connection._agui_defer = True
    try:
        yield
    finally:
        connection._agui_defer = False


def _send_queued(connection):
    """Send what is queued: in a pipeline, ahead of what follows; BEGIN and SET LOCAL unprepared.
    Through Django's own cursor class, which queues nothing."""
    queued, connection._agui_ahead = _queued(connection), []
    plain = _PLAIN[connection.cursor_factory]
    for sql, params in queued:
        plain(connection).execute(sql, params, **({"prepare": False} if params is None else {}))


def _pipeline(connection):
    """The pipeline already open (what is sent goes ahead of what follows in it), else a new one."""
    return nullcontext() if connection._pipeline is not None else connection.pipeline()


def send_queued(connection, commit=False):
    """What is queued (and COMMIT, when asked) in one round trip of its own."""
    if not _queued(connection) and not commit:
        return
    with _pipeline(connection):
        _send_queued(connection)
        if commit:
            _PLAIN[connection.cursor_factory](connection).execute(COMMIT, prepare=False)


def discard_queued(connection):
    """The transaction is rolled back: what never left is dropped. True when its BEGIN never left
    either (nothing reached the server)."""
    unopened = begin_pending(connection)
    connection._agui_ahead = []
    return unopened


class _AheadOfNext:
    def execute(self, query, params=None, **kwargs):
        conn = self._conn
        if getattr(conn, "_agui_defer", False) and params is not None:
            _queued(conn).append((query, params))
            return self
        if not _queued(conn):
            return super().execute(query, params, **kwargs)
        if params is None:
            send_queued(conn)
            return super().execute(query, params, **kwargs)
        with _pipeline(conn):  # one round trip: what is queued, the statement, the sync
            _send_queued(conn)
            super().execute(query, params, **kwargs)
        return self

    def executemany(self, query, params_seq, **kwargs):
        send_queued(self._conn)
        return super().executemany(query, params_seq, **kwargs)

    def copy(self, statement, params=None, **kwargs):
        send_queued(self._conn)
        return super().copy(statement, params, **kwargs)

    def stream(self, query, params=None, **kwargs):
        send_queued(self._conn)
        return super().stream(query, params, **kwargs)


class ServerBindingCursor(_AheadOfNext, base.ServerBindingCursor):
    pass


class Cursor(_AheadOfNext, base.Cursor):
    pass


FACTORIES = {base.ServerBindingCursor: ServerBindingCursor, base.Cursor: Cursor}
_PLAIN = {ours: django for django, ours in FACTORIES.items()}
