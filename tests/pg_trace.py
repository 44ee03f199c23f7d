"""The round trips a block makes to PostgreSQL on Django's connection, read from libpq's own trace
of the protocol messages (tests of what goes together in one round trip)."""

import contextlib
import re
import tempfile

from django.db import connection
from psycopg.pq import Trace


@contextlib.contextmanager
def traced():
    """The frontend messages of each round trip on Django's connection inside the block: a list of
    lists, one per batch the client sent before reading an answer."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    trips = []
    with tempfile.NamedTemporaryFile("w+") as log:
        pgconn.trace(log.fileno())
        pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        try:
            yield trips
        finally:
            pgconn.untrace()
            log.seek(0)
            previous = None
            for line in log.read().splitlines():
                side, _length, message = line.split("\t", 2)
                if side == "F":
                    if previous != "F":
                        trips.append([])
                    trips[-1].append(message.strip())
                previous = side


_PARSE = re.compile(r'^"(?P<name>[^"]*)" "(?P<sql>.*)" \d+(?: \S+)*$')


def sent(trip):
    """The statements a round trip carried, in order: each one's SQL, or "(prepared)" for a statement
    prepared on the connection before the trace began (Bind then names it, with no Parse)."""
    texts, bound, out = {}, None, []
    for message in trip:
        kind, _, rest = message.partition("\t")
        rest = rest.strip()
        if kind == "Parse":
            parsed = _PARSE.match(rest)
            texts[parsed["name"]] = parsed["sql"]
        elif kind == "Bind":
            bound = texts.get(rest.split('"')[3], "(prepared)")
        elif kind == "Execute":
            out.append(bound)
        elif kind == "Query":
            out.append(rest[1:-1])
    return out
