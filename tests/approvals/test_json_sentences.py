"""JSON a person typed that does not parse is said in the page's sentences: the request page and the
policy console showed Python's own English ("not valid JSON: Expecting ',' delimiter (line 1, column
12)"; "must be a JSON object" untranslated), whatever the reader's language."""

import pytest

from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db

WHERE = "not valid JSON near line 2, column 3: check its quotes, commas and brackets"


def test_the_request_page_says_where_in_a_sentence(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": '{"amount": 4\n  "x": 1}'})
    page = resp.content.decode()
    assert resp.status_code == 400 and WHERE in page and "Expecting" not in page


def test_the_policy_console_says_where_in_a_sentence(login):
    resp = login("admin").post("/policies/read_file/", {
        "action": "simulate", "mode": "conditional", "risk": "low", "approver_kind": "group",
        "required_approvals": "1", "timeout_action": "reject", "conditions": '[{"name": "x"\n  "when": {}}]'})
    page = resp.content.decode()
    assert resp.status_code == 400 and WHERE in page and "Expecting" not in page
