"""The audit trail is append-only in the database too, not only in the model: a raw UPDATE (or,
on PostgreSQL, DELETE) of approvals_auditevent fails. SQLite gets the UPDATE trigger only, since
Django's flush (between transactional tests) empties its tables with DELETE; PostgreSQL's flush
uses TRUNCATE, which row triggers do not see."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

PG_UP = """
CREATE FUNCTION approvals_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER approvals_audit_append_only BEFORE UPDATE OR DELETE ON approvals_auditevent
    FOR EACH ROW EXECUTE FUNCTION approvals_audit_append_only();
"""
PG_DOWN = """
DROP TRIGGER IF EXISTS approvals_audit_append_only ON approvals_auditevent;
DROP FUNCTION IF EXISTS approvals_audit_append_only();
"""
SQLITE_UP = """
CREATE TRIGGER approvals_audit_no_update BEFORE UPDATE ON approvals_auditevent
BEGIN SELECT RAISE(ABORT, 'audit events are append-only (UPDATE refused)'); END;
"""
SQLITE_DOWN = "DROP TRIGGER IF EXISTS approvals_audit_no_update;"


def forwards(apps, schema_editor):
    sql = {"postgresql": PG_UP, "sqlite": SQLITE_UP}.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql, params=None)  # no placeholders: keep the % of RAISE as it is


def backwards(apps, schema_editor):
    sql = {"postgresql": PG_DOWN, "sqlite": SQLITE_DOWN}.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql, params=None)  # no placeholders: keep the % of RAISE as it is


class Migration(migrations.Migration):

    dependencies = [
        ('approvals', '0004_inbox_status_decided_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='auditevent',
            name='actor',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                                    to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(forwards, backwards),
    ]
