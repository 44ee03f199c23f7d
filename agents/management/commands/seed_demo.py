"""Demo users, groups, accounts and a subscription, and the demo MCP server (asked for its tools by
the beat, agents.mcp_servers.tasks, not here: tests seed too). Safe to run again: it converges."""

import os
import sys
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction

from agents.catalog.models import Account, Order, Subscription
from agents.demo_accounts import USERS, on_password
from agents.mcp_servers import services as mcp_services
from agents.mcp_servers.models import MCPServer

ACCOUNTS = [("1234567890", "alice", Decimal("5432.10")), ("0987654321", "bob", Decimal("1000.00"))]
# the support workflow's orders: number, owner, item, amount
ORDERS = [("12345", "alice", "Wireless Headphones", Decimal("129.99")),
          ("12346", "alice", "Coffee Grinder", Decimal("59.00")),
          ("23456", "bob", "Desk Lamp", Decimal("35.50"))]


class Command(BaseCommand):
    help = "Create the demo users, groups, accounts and subscription (idempotent)."

    @transaction.atomic
    def handle(self, *args, **options):
        password = settings.DEMO_PASSWORD
        for username, groups, superuser in USERS:
            user, created = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.com"})
            if created:
                user.set_password(password)
            user.is_superuser = user.is_staff = superuser
            user.save()
            user.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])
        owners = {u.username: u for u in User.objects.filter(username__in=[a[1] for a in ACCOUNTS + ORDERS] + ["alice"])}
        for number, owner, balance in ACCOUNTS:
            Account.objects.get_or_create(number=number, defaults={"owner": owners[owner], "balance": balance})
        Subscription.objects.get_or_create(ref="sub_123", defaults={"owner": owners["alice"], "plan": "Premium"})
        for number, owner, item, amount in ORDERS:
            Order.objects.get_or_create(number=number, defaults={"owner": owners[owner], "item_name": item,
                                                                 "amount": amount})
        if not MCPServer.objects.filter(name="notes").exists():  # the notes agent's server (demo_notes.py)
            mcp_services.save_server("notes", {
                "transport": "stdio", "command": sys.executable, "args": ["-m", "agents.mcp_servers.demo_notes"],
                "cwd": str(settings.BASE_DIR), "agents": ["notes"],
                "env": {"AGUI_NOTES_FILE": os.environ.get("AGUI_NOTES_FILE")
                        or str(settings.BASE_DIR / "var" / "mcp-notes.json")}}, refresh=False)
        self.stdout.write(self.style.SUCCESS(f"demo data ready (password for every demo user: {password})"))
        if not settings.DEBUG:  # not refused: the benchmarks seed a stack that runs with DEBUG off
            self.warn_production(password)

    def warn_production(self, password):
        """With DJANGO_DEBUG=0 this ran silently and left a superuser admin / agui-demo in a production database."""
        known = on_password(password)
        if not known:
            return
        said = "the published demo password" if password == "agui-demo" else "DEMO_PASSWORD"
        self.stderr.write(self.style.WARNING(
            f"WARNING: DJANGO_DEBUG=0, and these accounts sign in with {said} ({password}): {', '.join(known)}. "
            "seed_demo is for demos. On a real site delete them or change their passwords, and create the "
            "first admin with `manage.py createsuperuser`."))
