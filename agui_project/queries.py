"""Rows by key: one(), Prepared (a read whose SQL is compiled once), read_ahead() (several such
reads in one round trip to PostgreSQL), PreparedUpdate (the same for an UPDATE of rows found by
key), PreparedInsert (for create() and add()), prefetched(); and on PostgreSQL unanswered() (writes
sent with the next statement), commit_lazily() (a commit that does not wait for the WAL) and
flush_after_hand_over() (a commit whose wait for the WAL follows the hand-over of its work)."""

import json
import logging
import secrets
import threading
import uuid
from contextlib import contextmanager, nullcontext

from django.apps import apps
from django.db import ProgrammingError, connections, router, transaction
from django.db.models import Expression, signals
from django.db.models.query import ModelIterable, ValuesListIterable, get_related_populators
from django.db.models.sql import InsertQuery, UpdateQuery
from psycopg.types.json import Json, Jsonb

log = logging.getLogger(__name__)


def one(queryset):
    """The row of a queryset filtered on a unique key (the primary key), or None.

    QuerySet.first() orders by the primary key before its LIMIT 1 when the queryset has no order,
    which one row does not need: building that ORDER BY is ~0.2 ms of the ORM's CPU, a third of
    such a look-up here, on the paths every run, decision and tool call take."""
    return next(iter(queryset[:1]), None)


def _marks(types):
    """Stand-ins for the caller's values: unique text, and for integers random 62-bit ones, which
    no query here holds as a constant."""
    return [f"\x1fprepared-{i}-{uuid.uuid4().hex}" if kind is str else secrets.randbits(62) | 1 << 61
            for i, kind in enumerate(types)]


def _mark_index(marks, param):
    """Which stand-in `param` is, or None for a constant of the query (1 is not True, nor "1" 1)."""
    return next((i for i, mark in enumerate(marks) if type(param) is type(mark) and param == mark), None)


class _Compiled:
    """One database's SQL of a Prepared read, and how to turn its rows into model instances (or,
    for a values_list() queryset, into the tuples it would give)."""

    def __init__(self, queryset, marks, alias):
        compiler = queryset.query.get_compiler(using=alias)
        self.sql, params = compiler.as_sql()
        # each parameter: the index of the caller's value it stands for, or a constant of the query
        self.slots = [("arg", _mark_index(marks, p)) if _mark_index(marks, p) is not None else ("const", p)
                      for p in params]
        missing = set(range(len(marks))) - {s[1] for s in self.slots if s[0] == "arg"}
        if missing:  # a value the field transforms (a UUID, a date) is not passed through as sent
            raise ValueError(f"Prepared: parameter(s) {sorted(missing)} do not reach the SQL unchanged")
        self.for_update = bool(queryset.query.select_for_update)
        fields = [s[0] for s in compiler.select[0:compiler.col_count]]
        self.converters = list(compiler.get_converters(fields).items())
        if queryset._iterable_class not in (ModelIterable, ValuesListIterable):
            raise ValueError("Prepared: a read of values is a values_list() queryset, not values(), flat or named")
        self.tuples = queryset._iterable_class is ValuesListIterable  # no instances to make
        if self.tuples:
            return
        klass_info = compiler.klass_info
        self.model = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self.span = (start, end)
        self.init_list = [f[0].target.attname for f in compiler.select[start:end]]
        self.populators = get_related_populators(klass_info, compiler.select, alias)
        self.annotations = dict(compiler.annotation_col_map or {})


class _ByKeys:
    """What Prepared and PreparedUpdate share: the model, the queryset built from the caller's
    values (`build`), how many there are and their types (text, or int per `types`)."""

    def __init__(self, model, build, arity=1, types=None):
        self.model, self.build, self.arity = model, build, arity
        self.types = tuple(types or (str,) * arity)
        if len(self.types) != arity or not set(self.types) <= {str, int}:
            raise ValueError(f"{type(self).__name__}: types holds str or int for each value")
        self._compiled = {}
        self._lock = threading.Lock()

    def _values(self, values):
        if len(values) != self.arity:
            raise TypeError(f"{type(self).__name__} takes {self.arity} value(s), got {len(values)}")
        if int in self.types:  # as the ORM would take "5" for an integer key
            values = tuple(int(v) if kind is int else v for v, kind in zip(values, self.types, strict=True))
        return values


class Prepared(_ByKeys):
    """A read of model instances (select_related included) by a few values, compiled to SQL once
    per database and then run with new values.

    Building and compiling a queryset costs the ORM 0.2-0.5 ms of CPU per statement here, ten
    times what running its SQL costs (a token look-up joined to its user and profile: 572 µs
    through the ORM, 37 µs as the same SQL through the cursor), and Django keeps no compiled
    queries. `build(*values)` returns the queryset; it is called once per database with stand-in
    values, text unless `types` says int for a value, which must reach the SQL unchanged (text and
    integer keys; a UUID or a date would be transformed, and is refused when compiled). The rows
    come back as QuerySet iteration (ModelIterable, Django 5.2) makes them: the backend's
    converters, from_db, select_related populators, annotations; from a values_list() queryset
    (not flat, not named), the tuples it would give. A read with select_for_update is compiled and
    run inside a transaction.
    """

    def _for(self, alias):
        compiled = self._compiled.get(alias)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(alias)
                if compiled is None:
                    marks = _marks(self.types)
                    compiled = self._compiled[alias] = _Compiled(self.build(*marks), marks, alias)
        return compiled

    def _statement(self, values, using):
        """(its key among reads ahead, the compiled read, its parameters) for these values."""
        values = self._values(tuple(values))
        if isinstance(self.model, str):  # "app_label.Model": for modules imported before the app registry
            self.model = apps.get_model(self.model)
        alias = using or router.db_for_read(self.model)
        compiled = self._for(alias)
        return (self, alias, values), compiled, [values[v] if kind == "arg" else v for kind, v in compiled.slots]

    def _ahead_statement(self, alias, values, locks=False):
        """For read_ahead: (key, SQL, parameters, False: rows are kept)."""
        key, compiled, params = self._statement(values, alias)
        if compiled.for_update and not locks:
            raise ValueError("a read under a lock is not read ahead")
        return key, compiled.sql, params, False

    def all(self, *values, using=None):
        key, compiled, params = self._statement(values, using)
        alias = key[1]
        connection = connections[alias]
        if compiled.for_update and not connection.in_atomic_block:
            raise RuntimeError("a Prepared read with select_for_update runs inside a transaction")
        rows = _ahead.take(key)
        if rows is None:
            with connection.cursor() as cursor:
                cursor.execute(compiled.sql, params)
                rows = cursor.fetchall()
        out = []
        for row in rows:
            if compiled.converters:
                row = list(row)
                for pos, (convs, expression) in compiled.converters:
                    value = row[pos]
                    for converter in convs:
                        value = converter(value, expression, connection)
                    row[pos] = value
            if compiled.tuples:
                out.append(tuple(row))
                continue
            start, end = compiled.span
            obj = compiled.model.from_db(alias, compiled.init_list, row[start:end])
            for populator in compiled.populators:
                populator.populate(row, obj)
            for name, pos in compiled.annotations.items():
                setattr(obj, name, row[pos])
            out.append(obj)
        return out

    def one(self, *values, using=None):
        """The first row, or None (build a query of one row: a unique key, or a slice [:1])."""
        rows = self.all(*values, using=using)
        return rows[0] if rows else None


class _Ahead(threading.local):
    """This thread's rows read ahead (read_ahead), each handed out once, by (read, alias, values);
    an update's count by (update, alias, SQL, parameters)."""

    rows = None

    def take(self, key):
        if not self.rows:
            return None
        try:
            return self.rows.pop(key, None)
        except TypeError:  # an update with a parameter that is no key (a list): never sent ahead
            return None


_ahead = _Ahead()


def commit_lazily(using="default"):
    """Inside atomic(): on PostgreSQL the transaction's COMMIT does not wait for its WAL to reach
    the disk (`synchronous_commit = off` for this transaction alone: the flush, ~0.1 ms idle and
    0.3-0.5 ms on a busy machine here, is most of a small write's commit). Only for writes that a
    later commit waiting for the flush makes durable before anything outside the database acts on
    them (PostgreSQL's WAL is written in order, so that commit's flush covers them): a crash of the
    server in between may lose them, as it would had the crash come before they were made. A
    worker's claim of a run and its making of a decision's continuation (recovery finds such a run
    again) are such writes, the claim of a tool call is not (it precedes the side effect) unless the
    tool's effects are rows of this database (lazy_commits); an AG-UI resume's decisions are, once
    their continuation is handed on (flush_after_hand_over). Elsewhere nothing changes (SQLite runs with synchronous=NORMAL)."""
    connection = connections[using]
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        connection.commit_lazily()  # agui_project/postgresql: said with the transaction's BEGIN


@contextmanager
def lazy_commits(using="default"):
    """On PostgreSQL, every transaction opened on `using` inside the block commits as
    commit_lazily() says, under the same rule: a later commit that waits for the flush must make
    them durable before anything outside the database acts on them (the caller's to see to). For a
    tool whose every effect is rows of this database (Tool.in_database): its call's claim and its
    own transactions, which the call's result then commits after them."""
    connection = connections[using]
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    connection.lazy_commits = True
    try:
        yield
    finally:
        connection.lazy_commits = False


# a WAL record and a transaction id: its commit waits for the flush (one without any WAL does not)
_FLUSH = "SELECT pg_logical_emit_message(true, 'agui-inbox', 'flush')"
_flush_refused = set()  # the aliases whose role may not call it (a DBA revoked it): a row is rewritten instead


def flush_after_hand_over(model, pk, using="default"):
    """Inside atomic(), right after the commit hook that hands this transaction's work to a worker (a
    decision's continuation): on PostgreSQL the transaction commits as commit_lazily() says and its
    next commit hook waits for the flush, so that the hand-over leaves before the disk is written
    and the worker's first steps overlap the flush; the caller's answer and the hooks registered
    later (the inbox's notice, mail, webhooks) come after it, as durable as before. The worker acts
    outside the database only after a commit of its own that waits (a tool's claim, or its result
    for a tool declared in_database), whose flush covers the decision too (the WAL is written in
    order). A crash of the server in between loses the decision as one before its commit would: its
    decider had no answer yet (at most the continuation's RUN_STARTED, as when a worker dies).
    `model`, `pk`: the row the transaction wrote, rewritten as it is
    to wait for the flush when the role may not call pg_logical_emit_message. Elsewhere nothing
    changes. The wait is registered once per transaction."""
    connection = connections[using]
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        return
    if any(getattr(func, "_agui_flush", False) for _sids, func, _robust in connection.run_on_commit):
        return

    def wait_for_flush():
        with connection.cursor() as cursor:
            if using not in _flush_refused:
                try:
                    cursor.execute(_FLUSH)
                    return
                except ProgrammingError as exc:  # not permitted (or no such function): the statement failed alone
                    log.warning("pg_logical_emit_message refused (%s): a decision's row is rewritten to wait for "
                                "the flush", exc)
                    _flush_refused.add(using)
            table, key = model._meta.db_table, connection.ops.quote_name(model._meta.pk.column)
            cursor.execute(f"UPDATE {connection.ops.quote_name(table)} SET {key} = {key} WHERE {key} = %s", [pk])

    wait_for_flush._agui_flush = True
    connection.commit_lazily()
    transaction.on_commit(wait_for_flush, using=using)


def drop_if_hung_up(using="default"):
    """After a long wait outside the database (a model's answer, streamed for seconds): a connection
    the server ended meanwhile (a restart, a failover, pg_terminate_backend, an idle-session killer)
    is closed, and the next statement opens another instead of failing the run on it. One poll of
    its socket, no round trip (agui_project/postgresql/base.hung_up); SQLite's never hang up."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        connection.drop_if_hung_up()


def unanswered(using="default"):
    """Inside atomic() on PostgreSQL, the statements run in the block go to the server with the next
    statement that needs an answer, or with the COMMIT, in that one's round trip, without waiting
    for their own (agui_project/postgresql/cursors.py): for writes whose answer nobody reads — a
    count already known (a row the transaction holds locked), a key its maker drew, an audit row —
    and that refuse nothing the caller would catch (a client's key may be taken: not here). An
    error one meets fails the transaction at that later statement, as it would have failed it
    here. Elsewhere they run at once. Nothing in the block may read: what it reads is not there."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return nullcontext()
    return connection.unanswered()


@contextmanager
def read_ahead(reads, using="default", lazy_commit=False, locks=False):
    """Inside the block, the first Prepared.all()/one() of each (read, values) in `reads` takes the
    rows read as the block began, when on PostgreSQL they were sent together in one round trip
    (psycopg's pipeline mode); a later call reads again. An entry (PreparedUpdate, values, fields)
    is sent in its place in the same round trip, the first update() with the same values and
    fields then taking its count: a worker's claim of a run and the read of what it claimed. The
    statements then run as one transaction, committed at the round trip's end (outside atomic(),
    as each would have alone), a read after the update seeing what it wrote. Each of these reads
    by key went to the server and waited for its answer before the next was sent: the AG-UI POST's checks (its token,
    its thread, its run id, what the thread holds) were four round trips of ~0.15-0.3 ms each where
    the server's own work is a few µs (auto_explain); Django sends one statement at a time.
    Elsewhere (SQLite reads in-process), or when the pipeline fails, nothing is read ahead and each
    read asks as before (inside a transaction the server's error is raised instead: it spoiled the
    transaction). A read with select_for_update is never read ahead (it waits for a lock).
    `lazy_commit`: outside atomic(), the round trip's writes commit as commit_lazily() says (on
    their own, they then wait for the flush as before). `locks`: a read under a lock may be among
    them, the statements after it then waiting with it, each seeing what was committed while it
    waited (the server runs them one after the other, each with a snapshot of its own): for a block
    that runs them in that order anyway, choosing nothing between them from what the locked read
    returns but to leave early."""
    rows = None
    connection = connections[using]
    lazy_commit = lazy_commit and not connection.in_atomic_block
    if connection.vendor == "postgresql" and (len(reads) > 1 or lazy_commit and reads):
        try:
            rows = _pipelined(reads, using, lazy_commit, locks)
        except Exception as exc:  # the reads themselves then ask, and say what is wrong
            if connection.in_atomic_block and not isinstance(exc, ValueError):
                raise  # the server's error spoiled the caller's transaction (a ValueError: nothing was sent)
            log.debug("reads not sent ahead: %r", exc)
    previous, _ahead.rows = _ahead.rows, rows
    try:
        yield
    finally:
        _ahead.rows = previous


def _pipelined(reads, alias, lazy_commit=False, locks=False):
    # (key, SQL, parameters, whether a count is kept rather than rows) of each (read, values) or
    # (update, values, fields)
    statements = [entry[0]._ahead_statement(alias, *entry[1:], locks=locks) for entry in reads]
    connection = connections[alias]
    connection.ensure_connection()
    cursors = []
    try:
        with connection.wrap_database_errors, connection.connection.pipeline():
            if lazy_commit:  # local to the round trip's own transaction (they are one until its sync)
                connection.commit_lazily()
            for key, sql, params, counted in statements:
                cursor = connection.cursor()
                cursors.append((key, cursor, counted))
                cursor.execute(sql, params)
        return {key: cursor.rowcount if counted else cursor.fetchall() for key, cursor, counted in cursors}
    finally:
        for _key, cursor, _counted in cursors:
            cursor.close()


def prefetched(instance, name, rows):
    """Hand `instance` the rows of its reverse foreign key `name` (read by a Prepared read, say) as
    prefetch_related() would, so that `instance.<name>.all()` costs no query: the relation's own
    queryset with its result cache filled, kept under the relation's cache name (Django 5.2's
    prefetch_one_level does the same; prefetch_related() itself builds and compiles the read)."""
    manager = getattr(instance, name)
    queryset = manager.get_queryset()  # the relation's filter: a further .filter() on it stays correct
    queryset._result_cache, queryset._prefetch_done = list(rows), True
    cache = instance.__dict__.setdefault("_prefetched_objects_cache", {})
    cache[manager.field.remote_field.cache_name] = queryset
    return instance


def is_prefetched(instance, name):
    """Whether `instance.<name>` has its rows already (prefetched() or prefetch_related()): a reverse
    foreign key's or a many-to-many's (which names its cache itself)."""
    manager = getattr(instance, name)
    cache_name = getattr(manager, "prefetch_cache_name", None) or manager.field.remote_field.cache_name
    return cache_name in instance.__dict__.get("_prefetched_objects_cache", {})


class _SetValue(Expression):
    """A value of a compiled UPDATE's SET clause: a placeholder whose parameter is a stand-in,
    replaced on each run by the caller's value as the ORM would prepare it for that column."""

    def __init__(self, mark, output_field):
        super().__init__(output_field=output_field)
        self.mark = mark

    def as_sql(self, compiler, connection):
        return "%s", [self.mark]


def _prepared(field, value, connection):
    """A SET value as SQLUpdateCompiler prepares it: a model instance for a relation by its key."""
    if hasattr(value, "prepare_database_save"):
        if not field.remote_field:
            raise TypeError(f"Tried to update field {field} with a model instance, {value!r}.")
        value = value.prepare_database_save(field)
    return field.get_db_prep_save(value, connection=connection)


def _keyed(param):
    """A parameter as part of a statement's key among those sent ahead: psycopg's JSON wrapper (a
    JSONField's value as prepared for the database) compares by identity, so by the JSON it holds."""
    if isinstance(param, (Json, Jsonb)):
        return type(param), json.dumps(param.obj, sort_keys=True, default=str)
    return param


class PreparedUpdate(_ByKeys):
    """An UPDATE of the rows a queryset finds by a few values, compiled to SQL once per database
    and set of columns, then run with new values: Prepared's reason (the ORM builds and compiles
    every statement anew, ~0.15 ms of CPU for a status change here, three times what running it
    costs) for the conditional status changes every run, call and decision makes.

    `build(*values)` returns the queryset, as for Prepared (text or, per `types`, integer keys).
    `update(*values, **fields)` sets the fields as QuerySet.update does (no signals, no auto_now):
    each plain value prepared for its column by the field, as the ORM prepares it
    (get_db_prep_save); an expression (F("attempts") + 1) is compiled into the statement, so each
    distinct one is a statement of its own. Returns the number of rows changed."""

    def _compile(self, alias, shape):
        marks = _marks(self.types)
        sets = {name: f"\x1fset-{name}-{uuid.uuid4().hex}" for name, expression in shape if expression is None}
        query = self.build(*marks).query.chain(UpdateQuery)
        meta = self.model._meta
        query.add_update_values({name: _SetValue(sets[name], meta.get_field(name)) if expression is None
                                 else expression for name, expression in shape})
        sql, params = query.get_compiler(using=alias).as_sql()
        by_mark = {mark: name for name, mark in sets.items()}
        slots = []
        for p in params:
            i = _mark_index(marks, p)
            if i is not None:
                slots.append(("arg", i))
            elif isinstance(p, str) and p in by_mark:
                slots.append(("set", (by_mark[p], meta.get_field(by_mark[p]))))
            else:
                slots.append(("const", p))
        if {s[1] for s in slots if s[0] == "arg"} != set(range(len(marks))):
            raise ValueError("PreparedUpdate: a value does not reach the SQL unchanged")
        return sql, slots

    def _statement(self, values, fields, using):
        """(its database, its SQL, its parameters) for these values and fields."""
        values = self._values(tuple(values))
        alias = using or router.db_for_write(self.model)
        # the statement's shape: which columns, and which of them an expression sets
        shape = tuple((name, v if hasattr(v, "resolve_expression") else None) for name, v in fields.items())
        compiled = self._compiled.get((alias, shape))
        if compiled is None:
            with self._lock:
                compiled = self._compiled.setdefault((alias, shape), self._compile(alias, shape))
        sql, slots = compiled
        connection = connections[alias]
        params = [values[v] if kind == "arg" else _prepared(v[1], fields[v[0]], connection)
                  if kind == "set" else v for kind, v in slots]
        return alias, sql, params

    def _key(self, alias, sql, params):
        """Its key among statements sent ahead: built only where some were (a JSON value is dumped)."""
        return self, alias, sql, tuple(map(_keyed, params))

    def _ahead_statement(self, alias, values, fields, locks=False):
        """For read_ahead: (key, SQL, parameters, True: the count is kept)."""
        alias, sql, params = self._statement(values, fields, alias)
        return self._key(alias, sql, params), sql, params, True

    def update(self, *values, using=None, **fields):
        alias, sql, params = self._statement(values, fields, using)
        count = _ahead.take(self._key(alias, sql, params)) if _ahead.rows else None
        if count is not None:
            return count
        with transaction.mark_for_rollback_on_error(using=alias), connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount


class PreparedInsert:
    """`Model.objects.create(**fields)` with its INSERT compiled once per database, not built and
    compiled by the ORM for every row: Prepared's reason, for the rows a decision, its audit
    entry, a continuation and a tool's result add on the way of the person waiting (~190 -> ~120
    µs of CPU per row here). The row is made as create() makes it: the instance built from the
    fields (defaults included), each column's value as the compiler prepares it (pre_save: the
    auto_now_add time; get_db_prep_save), the key written back from RETURNING (or given), the
    instance then saved in its database. Only for a model without parents, whose values are plain
    (no expression, no database default); create() itself when pre_save or post_save has a receiver
    for the model, or the backend cannot return the key of an insert."""

    def __init__(self, model):
        self.model = model
        self._compiled = {}
        self._lock = threading.Lock()

    def create(self, using=None, **fields):
        return self._insert(using, fields, answered=True)

    def add(self, using=None, **fields):
        """create() of a row whose database-made key nobody reads back and whose refusal nobody
        catches (an audit row; a message under the key it drew; a continuation): its INSERT returns
        nothing, and inside a transaction on PostgreSQL it goes with the next statement
        (unanswered()). Returns the instance; a key the database makes is not on it."""
        return self._insert(using, fields, answered=False)

    def _insert(self, using, fields, answered):
        model, meta = self.model, self.model._meta
        if meta.parents or signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
            return model._default_manager.db_manager(using).create(**fields)
        obj = model(**fields)
        obj._prepare_related_fields_for_save(operation_name="save")
        alias = using or router.db_for_write(model, instance=obj)
        if obj.pk is None:  # a key with a default (as save() takes it)
            obj.pk = meta.pk.get_pk_value_on_save(obj)
        given = obj.pk is not None
        shape = (alias, given, answered)
        compiled = self._compiled.get(shape)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.setdefault(shape, self._compile(*shape))
        sql, columns, returning = compiled
        if sql is None:  # this backend returns no key from an INSERT
            return model._default_manager.db_manager(alias).create(**fields)
        connection = connections[alias]
        params = []
        for field in columns:  # as SQLInsertCompiler's pre_save_val() and prepare_value()
            value = field.pre_save(obj, add=True)
            if hasattr(value, "resolve_expression"):
                raise TypeError(f"PreparedInsert: {meta.label}.{field.name} is given an expression")
            params.append(field.get_db_prep_save(value, connection=connection))
        with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor, \
                (nullcontext() if answered else unanswered(alias)):
            cursor.execute(sql, params)
            if returning:
                row = connection.ops.fetch_returned_insert_columns(cursor, [])
                for field, value in zip(returning, row, strict=True):
                    setattr(obj, field.attname, value)
        obj._state.adding, obj._state.db = False, alias
        return obj

    def _compile(self, alias, given, answered=True):
        """(SQL, its columns, the fields RETURNING gives), SQL None when the backend returns nothing.
        The columns as save() has them: every local one, the auto key only when given; nothing
        returned for a row whose key nobody reads (add())."""
        meta = self.model._meta
        columns = [f for f in meta.local_concrete_fields if given or f is not meta.auto_field]
        # a column with a default in the database and one here too (every column a migration adds:
        # tests/agui_project/test_rolling_deploys.py) is sent as the row has it: nothing to read back
        returning = [f for f in meta.db_returning_fields if not (f.has_db_default() and f.has_default())] \
            if not given and answered else []
        if returning and not connections[alias].features.can_return_columns_from_insert:
            return None, columns, None
        if any(f is not meta.auto_field for f in returning):
            raise ValueError(f"PreparedInsert: {meta.label} returns more than its key")
        query = InsertQuery(self.model)
        query.insert_values(columns, [self.model()])  # a stand-in: the compiler runs pre_save() on it
        compiler = query.get_compiler(using=alias)
        compiler.returning_fields = returning
        ((sql, params),) = compiler.as_sql()
        if len(params) != len(columns) or sql.count("%s") != len(columns):
            raise ValueError(f"PreparedInsert: {meta.label}'s INSERT does not take one placeholder per column")
        return sql, columns, returning
