"""A thread's messages, appended in order (Message.seq from the thread's counter)."""

from django.db import connection, transaction
from django.db.models import F

from agui_project.queries import PreparedInsert

from .models import Message, Thread

_MESSAGE = PreparedInsert(Message)  # its INSERT compiled once: a tool's result is on the way of whoever waits


def _returning():
    """Whether the database has UPDATE ... RETURNING (PostgreSQL; SQLite from 3.35)."""
    if connection.vendor == "postgresql":
        return True
    return connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 35)


def _advance(thread_id, count):
    """The thread's message counter moved on by `count`; returns its new value. One statement
    where the database returns the updated row (Django's update() returns a row count only and
    the ORM has no UPDATE ... RETURNING), else the update and a read back."""
    if _returning():
        table, column, pk = (connection.ops.quote_name(name) for name in (
            Thread._meta.db_table, Thread._meta.get_field("message_seq").column, Thread._meta.pk.column))
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {column} = {column} + %s WHERE {pk} = %s RETURNING {column}",
                           [count, thread_id])
            return cursor.fetchone()[0]
    Thread.objects.filter(pk=thread_id).update(message_seq=F("message_seq") + count)
    return Thread.objects.values_list("message_seq", flat=True).get(pk=thread_id)


def add_message(thread, role, content="", *, run=None, tool_calls=None, tool_call_id="", message_id=None):
    """Append a message with the thread's next sequence number (the row lock orders writers)."""
    with transaction.atomic(savepoint=False):  # inside a caller's transaction: no savepoint round trips
        seq = _advance(thread.pk, 1)
        fields = {"thread": thread, "run": run, "seq": seq, "role": role, "content": content or "",
                  "tool_calls": tool_calls or None, "tool_call_id": tool_call_id or ""}
        if message_id:  # a client's id may be taken: the INSERT is answered where it is made
            return _MESSAGE.create(id=message_id, **fields)
        # under the id it drew it refuses nothing: it goes with the next statement (the COMMIT, most often)
        return _MESSAGE.add(**fields)


def add_messages(thread, messages, *, run=None, locked=False):
    """Append (id, role, content, tool_call_id[, parts[, error]]) rows at once: one counter update
    and one INSERT (three queries per message held SQLite's write lock for seconds on a long list).
    `parts`: a user message's AG-UI content parts when it has images; `error`: a failed frontend
    tool's reason (agents/agui/incoming.py). `locked`: the caller read `thread` under its row lock
    in this transaction and saves its message_seq itself (start_run: one UPDATE for the counter,
    the title and updated_at)."""
    if not messages:
        return []
    with transaction.atomic(savepoint=False):
        if locked:
            first = thread.message_seq + 1
            thread.message_seq += len(messages)
        else:
            first = _advance(thread.pk, len(messages)) - len(messages) + 1
        return Message.objects.bulk_create([
            Message(thread=thread, run=run, seq=first + i, role=row[1], content=row[2] or "",
                    tool_call_id=row[3] or "", parts=row[4] if len(row) > 4 else None,
                    error=(row[5] if len(row) > 5 else "") or "", **({"id": row[0]} if row[0] else {}))
            for i, row in enumerate(messages)
        ])
