"""The sign-in page says why it came up when a session ended under the browser (expired, deleted on
the server, a password changed elsewhere): a click on Approve or Send had turned into this page with
no word of why. A first visit and a logout are not told so."""

import pytest
from django.contrib.sessions.models import Session

pytestmark = pytest.mark.django_db
ENDED = "Your session has ended. Log in again to go on where you were."


def _login_page(client, path):
    response = client.get(path, follow=True)
    assert response.redirect_chain and response.redirect_chain[-1][0].startswith("/accounts/login/?next=")
    return response.content.decode()


def test_a_session_deleted_on_the_server_is_said_to_have_ended(client, demo):
    client.force_login(demo["finn"])
    assert client.get("/inbox/").status_code == 200
    Session.objects.all().delete()  # clearsessions, an admin, its expiry
    page = _login_page(client, "/inbox/")
    assert ENDED in page


def test_a_password_changed_elsewhere_ends_it_too(client, demo):
    client.force_login(demo["finn"])
    demo["finn"].set_password("a new one, elsewhere")
    demo["finn"].save()
    assert ENDED in _login_page(client, "/inbox/")


def test_a_first_visit_and_a_logout_are_not_told_it_ended(client, demo):
    assert ENDED not in _login_page(client, "/inbox/")
    client.force_login(demo["finn"])
    client.post("/accounts/logout/")
    assert ENDED not in _login_page(client, "/inbox/")
    refused = client.post("/accounts/login/", {"username": "finn", "password": "wrong"})
    assert ENDED not in refused.content.decode()


NOT_SENT = "Your session had ended, so what you just sent (a decision, a message) was not sent."


def test_a_decision_sent_after_the_session_ended_is_said_not_sent(client, demo):
    """The phone had let its session cookie go too (expired): the POST of a decision came without one,
    and the sign-in page said only "Log in" (tester's P16)."""
    response = client.post("/inbox/bulk/", {"ids": ["1"], "decision": "approve"}, follow=True)
    assert response.redirect_chain[-1][0].startswith("/accounts/login/?next=")
    page = response.content.decode()
    assert NOT_SENT in page and ENDED not in page
