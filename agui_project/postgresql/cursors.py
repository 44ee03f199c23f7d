"""A transaction's BEGIN sent in the round trip of its first statement.

With autocommit off, psycopg opens each transaction by sending BEGIN and waiting for its answer
before it sends the first statement, in pipeline mode too (it syncs after the BEGIN): a round trip
of its own, ~0.1-0.2 ms here, on every transaction.atomic() (a decision, a resume, a tool's result
and its message each pay one on the way of the person waiting). Here psycopg's autocommit stays on
and a transaction Django opens is only noted on the connection (DatabaseWrapper._set_autocommit);
the cursor that runs its first statement sends BEGIN and that statement together, in one pipeline
(or queues BEGIN ahead of it in the pipeline already open: queries.read_ahead). A statement without
parameters may be several (a migration's), which only the simple protocol takes, outside a
pipeline: BEGIN then goes on its own, as before. COMMIT and ROLLBACK
are sent by psycopg as before: it ends a transaction the server has open whatever its autocommit
says, and one whose BEGIN was never sent has nothing to end.
"""

from django.db.backends.postgresql import base

BEGIN = b"BEGIN"
# this transaction's COMMIT does not wait for its WAL to reach the disk (queries.commit_lazily)
LAZY = b"SET LOCAL synchronous_commit TO OFF"


def begin_pending(connection):
    """Whether `connection` (psycopg's) has a transaction whose BEGIN is not sent yet."""
    return bool(getattr(connection, "_agui_begin", ()))


def note_begin(connection, pending):
    connection._agui_begin = (BEGIN,) if pending else ()


def commit_lazily(connection):
    """The transaction open on `connection` commits without waiting for the WAL's flush: said with
    its BEGIN when that is not sent yet, else now."""
    if begin_pending(connection):
        connection._agui_begin += (LAZY,)
    else:
        connection.execute(LAZY, prepare=False)


def _queue_begin(connection):
    """Send (in a pipeline: queue) the noted BEGIN and what goes with it."""
    statements, connection._agui_begin = connection._agui_begin, ()
    for statement in statements:
        connection.cursor().execute(statement, prepare=False)


def send_begin(connection):
    """Open the noted transaction now, on its own (a statement that cannot take it along)."""
    if begin_pending(connection):
        _queue_begin(connection)


class _BeginWithFirst:
    def execute(self, query, params=None, **kwargs):
        conn = self._conn
        if not begin_pending(conn):
            return super().execute(query, params, **kwargs)
        if params is None:  # may be several statements (a migration's SQL): only the simple protocol takes them
            send_begin(conn)
            return super().execute(query, params, **kwargs)
        if conn._pipeline is not None:  # in a pipeline already: BEGIN goes ahead of the statement
            _queue_begin(conn)
            return super().execute(query, params, **kwargs)
        with conn.pipeline():  # one round trip: BEGIN, the statement, the sync
            _queue_begin(conn)
            super().execute(query, params, **kwargs)
        return self

    def executemany(self, query, params_seq, **kwargs):
        send_begin(self._conn)
        return super().executemany(query, params_seq, **kwargs)

    def copy(self, statement, params=None, **kwargs):
        send_begin(self._conn)
        return super().copy(statement, params, **kwargs)

    def stream(self, query, params=None, **kwargs):
        send_begin(self._conn)
        return super().stream(query, params, **kwargs)


class ServerBindingCursor(_BeginWithFirst, base.ServerBindingCursor):
    pass


class Cursor(_BeginWithFirst, base.Cursor):
    pass


FACTORIES = {base.ServerBindingCursor: ServerBindingCursor, base.Cursor: Cursor}
