"""A deploy runs `migrate` before the new processes start (README, *Upgrading*), while the old ones
still serve. A NOT NULL column added with a default kept only in Python (Django drops the column's
temporary DEFAULT once it has filled the rows) failed every INSERT from code that does not know it:
every tool call an old worker proposed (agents_toolcall.agent), a new person's first language or zone
(people_profile). Each such column keeps its default in the database too (`db_default`)."""

import pytest
from django.apps import apps
from django.db import connection, migrations, models
from django.db.migrations.loader import MigrationLoader

OURS = {"people", "state", "approvals", "agents", "webhooks", "catalog", "mcp_servers"}
# no value would serve as a default: a grant is always made with its user (approvals 0002, before the
# grants were ever deployed)
NONE_SERVES = {("approvals", "threadgrant", "user")}


def added_later():
    """(app, model, field) of each NOT NULL column a migration added to an existing table."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for (app, _name), migration in sorted(loader.disk_migrations.items()):
        if app not in OURS:
            continue
        for operation in migration.operations:
            if isinstance(operation, migrations.AddField) and not operation.field.null \
                    and not operation.field.many_to_many:
                yield app, operation.model_name, operation.name


def test_there_are_such_columns_to_check():
    assert len(list(added_later())) > 20


@pytest.mark.parametrize(("app", "model", "name"), sorted(set(added_later()) - NONE_SERVES))
def test_each_column_added_to_a_table_keeps_its_default_in_the_database(app, model, name):
    field = apps.get_model(app, model)._meta.get_field(name)
    assert field.db_default is not models.NOT_PROVIDED, f"{app}.{model}.{name}: give it a db_default"
    # and one in Python: a row made here holds the value, not Django's DatabaseDefault, which stays
    # in the instance after its INSERT until it is read again
    assert field.has_default(), f"{app}.{model}.{name}: give it a default too"


@pytest.mark.django_db
def test_an_insert_that_names_none_of_them_is_taken(demo):
    """What an old worker's INSERT does: the columns it does not know take their defaults."""
    from agents import services
    from agents.models import Run

    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.SUCCEEDED)
    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [run.pk])
        columns = [c[0] for c in cursor.description]
        row = dict(zip(columns, cursor.fetchone(), strict=True))
        old = {c: v for c, v in row.items() if c not in {"client_tools", "resume_run_id", "undelivered_end",
                                                           "queued_messages", "context", "ignored_messages"}}
        old["id"] = "old-worker-run"
        placeholders = ", ".join(["%s"] * len(old))
        cursor.execute(f"INSERT INTO {table} ({', '.join(map(connection.ops.quote_name, old))}) "
                       f"VALUES ({placeholders})", list(old.values()))
    made = Run.objects.get(pk="old-worker-run")
    assert (made.client_tools, made.resume_run_id, made.queued_messages, made.context) == ([], "", [], [])
