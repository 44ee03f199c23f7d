"""API tokens expire (AGUI_TOKEN_TTL_SECONDS after they were made) and can be revoked (DELETE
/api/auth/token/, the admin); either way REST (`Token` and `Bearer`) and AG-UI answer 401."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
KEYWORDS = ["Token", "Bearer"]


@pytest.fixture
def ttl(settings):
    settings.AGUI_TOKEN_TTL_SECONDS = 3600
    return 3600


def client_for(token, keyword="Token"):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {token.key}")
    return client


def age(token, seconds):
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(seconds=seconds))


def agui_agents(token, keyword="Token"):
    return Client().get("/agui/", HTTP_AUTHORIZATION=f"{keyword} {token.key}")


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_an_expired_token_is_refused_everywhere(demo, ttl, keyword):
    token = Token.objects.create(user=demo["alice"])
    age(token, ttl - 60)
    assert client_for(token, keyword).get("/api/threads/").status_code == 200
    assert agui_agents(token, keyword).status_code == 200

    age(token, ttl + 1)
    resp = client_for(token, keyword).get("/api/threads/")
    assert resp.status_code == 401
    assert resp.json() == {"message": "The token has expired. Ask for a new one.", "code": "invalid_token",
                           "reason": "expired"}
    resp = agui_agents(token, keyword)
    assert resp.status_code == 401 and "expired" in resp.json()["message"]
    assert (resp.json()["code"], resp.json()["reason"]) == ("invalid_token", "expired")
    assert Token.objects.filter(pk=token.pk).exists()  # refused, not deleted: the admin still sees it


def test_no_expiry_when_the_ttl_is_zero(demo, settings):
    settings.AGUI_TOKEN_TTL_SECONDS = 0
    token = Token.objects.create(user=demo["alice"])
    age(token, 10 * 365 * 24 * 3600)
    assert client_for(token).get("/api/threads/").status_code == 200
    assert client_for(token).get("/api/auth/token/").json()["expires_at"] is None


def test_the_token_endpoint_says_when_it_expires(demo, ttl):
    token = Token.objects.create(user=demo["alice"])
    body = client_for(token, "Bearer").get("/api/auth/token/").json()
    created = timezone.datetime.fromisoformat(body["created"])
    expires = timezone.datetime.fromisoformat(body["expires_at"])
    assert expires - created == timedelta(seconds=ttl)
    assert body == {"created": body["created"], "expires_at": body["expires_at"]}  # nothing else: not the key


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_a_revoked_token_is_refused(demo, keyword):
    token = Token.objects.create(user=demo["alice"])
    resp = client_for(token, keyword).delete("/api/auth/token/")
    assert resp.status_code == 204
    assert not Token.objects.filter(user=demo["alice"]).exists()
    resp = client_for(token, keyword).get("/api/threads/")
    assert resp.status_code == 401 and "revoked" in resp.json()["message"]
    assert (resp.json()["code"], resp.json()["reason"]) == ("invalid_token", "unknown")
    assert agui_agents(token, keyword).status_code == 401


def test_the_refusals_say_why_in_a_code_a_program_can_read(demo, ttl):
    """The sentences are translated, so a program told a refused token from a missing one, an
    expired token (ask for a new one) from a disabled account (ask a person), or a 403 from a 404
    only by parsing French or Chinese: every API error has a `code`, a refused token a `reason`."""
    token = Token.objects.create(user=demo["bob"])
    french = {"HTTP_ACCEPT_LANGUAGE": "fr"}
    anonymous = APIClient().get("/api/threads/", **french)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"
    assert "reason" not in anonymous.json()
    assert client_for(token).get("/api/policies/", **french).json()["code"] == "permission_denied"  # bob is no admin
    assert client_for(token).delete("/api/threads/", **french).json()["code"] == "method_not_allowed"
    assert client_for(token).get("/api/approvals/999999/", **french).json()["code"] == "not_found"
    invalid = client_for(token).post("/api/approvals/999999/decide/", {"decision": "maybe"}, format="json", **french)
    assert invalid.status_code == 400 and invalid.json()["code"] == "invalid_input" and "decision" in invalid.json()
    demo["bob"].is_active = False
    demo["bob"].save()
    disabled = client_for(token).get("/api/threads/", **french)
    assert disabled.status_code == 401 and (disabled.json()["code"], disabled.json()["reason"]) == (
        "invalid_token", "inactive")
    assert agui_agents(token).json()["reason"] == "inactive"


def test_signed_in_with_a_session_a_person_revokes_their_token(demo):
    token = Token.objects.create(user=demo["alice"])
    other = Token.objects.create(user=demo["bob"])
    session = APIClient(enforce_csrf_checks=True)
    session.force_login(demo["alice"])
    assert session.delete("/api/auth/token/").status_code == 403  # a session is a browser: CSRF applies
    session = APIClient()
    session.force_login(demo["alice"])
    assert session.delete("/api/auth/token/").status_code == 204
    assert client_for(token).get("/api/threads/").status_code == 401
    assert client_for(other).get("/api/threads/").status_code == 200  # only the caller's own
    assert session.get("/api/auth/token/").status_code == 404


def test_an_admin_revokes_a_token_in_the_admin(demo):
    token = Token.objects.create(user=demo["alice"])
    admin = Client()
    admin.force_login(demo["admin"])
    # DRF's token admin addresses a token by its user's id
    resp = admin.post(f"/admin/authtoken/tokenproxy/{demo['alice'].pk}/delete/", {"post": "yes"})
    assert resp.status_code == 302, resp.content[:500]
    assert not Token.objects.filter(pk=token.pk).exists()
    assert client_for(token).get("/api/threads/").status_code == 401


def test_anonymous_callers_get_401(demo):
    assert APIClient().get("/api/auth/token/").status_code == 401
    assert APIClient().delete("/api/auth/token/").status_code == 401


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_a_new_password_revokes_the_accounts_token(demo, keyword):
    """As Django ends the account's other sessions: a token taken by whoever made its owner change
    the password kept working."""
    alice, bob = demo["alice"], demo["bob"]
    token, others = Token.objects.create(user=alice), Token.objects.create(user=bob)
    alice.email = "alice@elsewhere.example"
    alice.save()  # another change keeps it
    assert client_for(token, keyword).get("/api/threads/").status_code == 200

    alice.set_password("a-new-password-1")
    alice.save()
    resp = client_for(token, keyword).get("/api/threads/")
    assert resp.status_code == 401 and "revoked" in resp.json()["message"]
    assert agui_agents(token, keyword).status_code == 401
    assert client_for(others, keyword).get("/api/threads/").status_code == 200


def test_a_sign_in_that_upgrades_the_password_hash_keeps_the_token(demo, settings):
    """Django rehashes a password on sign-in when its hasher or iteration count changed: the same
    password, so not a reason to end the account's API token (it was revoked as a new password)."""
    alice = demo["alice"]
    token = Token.objects.create(user=alice)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher",
                                 "django.contrib.auth.hashers.MD5PasswordHasher"]
    assert alice.check_password(settings.DEMO_PASSWORD) and alice.password.startswith("pbkdf2_sha256$")
    assert client_for(token, "Token").get("/api/threads/").status_code == 200


@pytest.fixture
def token_clerk(demo):
    """A staff member an admin let see and make tokens (Django's view and add permissions), nothing else."""
    from django.contrib.auth.models import Permission, User

    clerk = User.objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.set(Permission.objects.filter(content_type__app_label="authtoken"))
    client = Client()
    client.force_login(clerk)
    return client


def test_the_admins_tokens_page_shows_no_key(demo, token_clerk):
    """A key is its account's way in: the Tokens page listed every account's in full, so whoever
    could see that page (a staff member given the view permission, a screen shared in a call)
    could act as any of them, an admin included."""
    admins = Token.objects.create(user=demo["admin"])
    for client in (token_clerk, _admin_client(demo)):
        listing = client.get("/admin/authtoken/tokenproxy/")
        assert listing.status_code == 200 and "admin" in listing.content.decode()
        assert admins.key not in listing.content.decode()
        assert admins.key not in client.get(f"/admin/authtoken/tokenproxy/{demo['admin'].pk}/change/").content.decode()


def _admin_client(demo):
    client = Client()
    client.force_login(demo["admin"])
    return client


def test_only_a_superuser_makes_a_token_and_reads_it_once(demo, token_clerk):
    """A token is its account's whole power: a staff member with the add permission made one for the
    admin and read it in the list, then called the API as the admin."""
    refused = token_clerk.post("/admin/authtoken/tokenproxy/add/", {"user": demo["admin"].pk})
    assert refused.status_code == 403
    assert not Token.objects.filter(user=demo["admin"]).exists()

    made = _admin_client(demo).post("/admin/authtoken/tokenproxy/add/", {"user": demo["alice"].pk})
    token = Token.objects.get(user=demo["alice"])
    assert made.status_code == 200 and token.key in made.content.decode()  # shown on this page, once
    assert "shown this once" in made.content.decode()
    assert client_for(token).get("/api/threads/").status_code == 200
    from django.contrib.admin.models import LogEntry

    assert [e.object_repr for e in LogEntry.objects.all()] == ["token of alice"]  # the admin's log keeps no key
    assert token.key not in _admin_client(demo).get("/admin/").content.decode()  # its recent actions
    deleting = _admin_client(demo).get(f"/admin/authtoken/tokenproxy/{demo['alice'].pk}/delete/")
    assert deleting.status_code == 200 and token.key not in deleting.content.decode()


def test_a_token_is_not_moved_to_another_account_in_the_admin(demo, token_clerk):
    """The page's form had the token's user: a staff member with the change permission moved a
    token whose key they held (their own) to the admin, and the key they knew acted as the admin."""
    from django.contrib.auth.models import User

    clerk = User.objects.get(username="clerk")
    own = Token.objects.create(user=clerk)
    for client in (token_clerk, _admin_client(demo)):
        client.post(f"/admin/authtoken/tokenproxy/{clerk.pk}/change/", {"user": demo["admin"].pk})
        assert Token.objects.get(pk=own.pk).user == clerk
