"""seed_demo with DJANGO_DEBUG=0 says loudly that it left accounts anyone can sign in to (it ran silently
and left the superuser admin / agui-demo in a production database). It still runs: the benchmarks seed
a stack that runs with DEBUG off."""

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def seed():
    out, err = io.StringIO(), io.StringIO()
    call_command("seed_demo", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_with_debug_off_it_names_the_accounts_with_the_published_password(settings):
    settings.DEBUG = False
    settings.DEMO_PASSWORD = "agui-demo"
    out, err = seed()
    assert "demo data ready" in out and User.objects.get(username="admin").is_superuser  # not refused
    assert "WARNING: DJANGO_DEBUG=0" in err and "the published demo password (agui-demo)" in err
    assert "admin (a superuser)" in err and "finn" in err
    assert "manage.py createsuperuser" in err


def test_accounts_whose_password_was_changed_are_not_named(settings):
    settings.DEBUG = False
    settings.DEMO_PASSWORD = "agui-demo"
    seed()
    for user in User.objects.filter(username__in=["admin", "alice", "bob", "rita", "finn"]):
        user.set_password("something else entirely")
        user.save()
    assert seed()[1] == ""


def test_in_development_it_says_nothing_more(settings):
    settings.DEBUG = True
    assert seed()[1] == ""
