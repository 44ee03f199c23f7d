"""The request page sends its decision by script (a network failure then loses nothing on the page):
the view answers it with where to go next, or with the refusal, and the plain POST stays as it was."""

import pytest

from approvals.models import HeldDecision
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db

SCRIPT = {"HTTP_X_REQUESTED_WITH": "XMLHttpRequest", "HTTP_ACCEPT": "application/json"}


@pytest.fixture(autouse=True)
def undo_window(settings):
    settings.AGUI_UNDO_SECONDS = 5  # held, as on the pages


def test_a_decision_sent_by_script_is_told_where_to_go(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": "Not now"}, **SCRIPT)
    assert resp.status_code == 200
    held = HeldDecision.objects.get(request=req)
    assert resp.json()["location"].endswith(f"held={held.pk}")


def test_a_refusal_sent_by_script_holds_nothing(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": ""}, **SCRIPT)
    assert resp.status_code == 400 and resp.json()["code"] == "feedback_required"
    assert not HeldDecision.objects.filter(request=req).exists()


def test_the_plain_post_still_redirects(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": "Not now"})
    assert resp.status_code == 302 and "held=" in resp["Location"]
