"""What a signed-in person's pages and the API's answers show (requests' arguments, account numbers,
conversations, the audit log) is kept out of caches: a browser on a shared computer showed the inbox
again from its cache through Back after its user had signed out, as Django's own views are kept out
only where they say never_cache (sign-in, the mailed links' pages). Public files keep theirs."""

import pytest
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/inbox/", "/audit/", "/inbox/stats/", "/chat/", "/api/approvals/"])
def test_a_signed_in_persons_pages_are_not_stored(login, path):
    response = login("admin").get(path)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


def test_an_api_answer_to_a_token_is_not_stored(demo, client):
    key = Token.objects.create(user=demo["finn"]).key
    response = client.get("/api/approvals/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]


def test_public_answers_keep_their_own_caching(client):
    assert "Cache-Control" not in client.get("/jsi18n/")  # the same for everyone
