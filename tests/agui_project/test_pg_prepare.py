"""On PostgreSQL a statement a pooled connection runs again is prepared there (settings.AGUI_DB_PREPARE):
planned once per connection instead of on every run."""

import json
import os
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.db import connection


@pytest.mark.django_db
def test_on_postgresql_a_statement_run_twice_on_a_connection_is_prepared_there():
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    for _ in range(3):
        assert not get_user_model().objects.filter(username="nobody-by-this-name").exists()
    with connection.cursor() as cur:
        cur.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cur.fetchall()]
    assert any('"auth_user"' in statement and "username" in statement for statement in prepared), prepared


@pytest.mark.parametrize("prepare, options", [
    ("1", {"server_side_binding": True, "prepare_threshold": 2}),
    ("0", {"server_side_binding": None, "prepare_threshold": None}),
])
def test_agui_db_prepare_sets_psycopgs_options_for_postgresql_only(prepare, options):
    code = ("import json; from agui_project import settings as s; o = s.DATABASES['default'].get('OPTIONS', {}); "
            "print(json.dumps({k: o.get(k) for k in ('server_side_binding', 'prepare_threshold')}))")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agui_project.settings", "AGUI_DB_PREPARE": prepare}
    for url, expected in (("postgres://u@127.0.0.1:5432/x", options),
                          ("sqlite:////tmp/never-opened.sqlite3", {"server_side_binding": None, "prepare_threshold": None})):
        out = subprocess.run([sys.executable, "-c", code], env={**env, "DATABASE_URL": url}, capture_output=True,
                             text=True, check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        assert json.loads(out.stdout.strip().splitlines()[-1]) == expected
