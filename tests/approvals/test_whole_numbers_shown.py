"""JSON's 500.0 and 500 are one number: the arguments' read-only view showed 500.0 where the editor
and the headline said 500 (approvals/templatetags/inbox_tags.as_read)."""

import pytest

from approvals.templatetags.inbox_tags import as_read, pretty_json, tojson
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def test_whole_numbers_read_as_written():
    value = {"amount": 500.0, "rate": 0.5, "ids": [1.0, 2], "nested": {"n": -3.0}, "flag": True, "big": 1e300}
    assert as_read(value) == {"amount": 500, "rate": 0.5, "ids": [1, 2], "nested": {"n": -3}, "flag": True,
                              "big": 1e300}
    assert type(as_read(value)["amount"]) is int and as_read(value)["flag"] is True
    assert tojson({"amount": 500.0}) == '{"amount": 500}' and '"amount": 500\n' in pretty_json({"amount": 500.0})


def test_the_request_page_shows_the_amount_as_the_editor_does(login):
    req = make_request("alice", arguments={"from_account": "1234567890", "to_account": "0987654321",
                                            "amount": 500.0, "currency": "USD"})
    import re

    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    shown = re.search(r'<pre class="code-block" tabindex="0" id="requested-arguments">(.*?)</pre>', page, re.S).group(1)
    assert "&quot;amount&quot;: 500," in shown and "500.0" not in shown
