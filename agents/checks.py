"""Demo accounts left on the published password in a production database (a `make run` database taken
into production, seed_demo run there): anyone who read the README signs in as them, one as a superuser.
Asked of the database only where Django lets checks ask it (`migrate`, `check --database default`), and
with DEBUG off, as Django's own deploy checks; a warning, so a demo served with DEBUG off still starts."""

from django.conf import settings
from django.contrib.auth.models import User
from django.core.checks import Tags, Warning, register
from django.db import DEFAULT_DB_ALIAS, connections

from .demo_accounts import PUBLISHED, on_password


@register(Tags.security, Tags.database)
def demo_passwords(app_configs, databases=None, **kwargs):
    if settings.DEBUG or not databases or DEFAULT_DB_ALIAS not in databases:
        return []
    if User._meta.db_table not in connections[DEFAULT_DB_ALIAS].introspection.table_names():
        return []  # `migrate` checks before it creates the tables: a new database has no accounts yet
    said = {settings.DEMO_PASSWORD: "the demo's password (DEMO_PASSWORD)",  # the README's, when it is the same
            PUBLISHED: "the password the README publishes for the demo (agui-demo)"}
    return [Warning(f"These accounts sign in with {words}: {', '.join(known)}.",
                    hint="On a real site delete them, or give them passwords of their own "
                         "(`manage.py changepassword <name>`); create the first admin with `manage.py createsuperuser`.",
                    id="agui.W005")
            for password, words in said.items() if (known := on_password(password))]
