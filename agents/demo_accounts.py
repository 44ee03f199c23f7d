"""The demo's accounts (seed_demo creates them, all on one published password) and which of them still
sign in with it: seed_demo says so when it runs with DEBUG off, and so does the check in agents/checks.py
for a database that went from a demo into production."""

from django.contrib.auth.hashers import check_password
from django.contrib.auth.models import User

PUBLISHED = "agui-demo"  # the README's, and DEMO_PASSWORD's default

USERS = [
    # username, groups, superuser
    ("admin", ["oncall"], True),  # oncall: where the ops agent's deletions escalate
    ("alice", [], False),
    ("bob", [], False),
    ("rita", ["reviewers", "support"], False),  # support: approves the support workflow's refunds
    ("finn", ["finance", "reviewers"], False),
]


def on_password(password: str) -> list[str]:
    """The demo accounts, active, that `password` signs in to ("admin (a superuser)"), read without the
    hash upgrade User.check_password would save."""
    return [user.username + (" (a superuser)" if user.is_superuser else "")
            for user in User.objects.filter(username__in=[name for name, _, _ in USERS], is_active=True).order_by("pk")
            if check_password(password, user.password)]
