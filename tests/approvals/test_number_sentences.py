"""A limit in a sentence about arguments is written the reader's way, digits grouped: "1,000,000",
"1 000 000" (a French reviewer read "Doit valoir au plus 1000000.")."""

import pytest
from django.utils import translation

from agents.registry import get_agent
from agui_project.schema_sentences import number
from approvals.registry import ArgumentsInvalid

GOOD = {"from_account": "12345678", "to_account": "87654321", "amount": 100.0, "currency": "EUR"}


def _amount_error(language):
    with translation.override(language), pytest.raises(ArgumentsInvalid) as exc:
        get_agent("banking").tool("transfer_money").validate({**GOOD, "amount": 2_500_000.5})
    return exc.value.errors["amount"][0]


@pytest.mark.parametrize(("language", "limit"), [
    ("en", "1,000,000"), ("fr", "1\xa0000\xa0000"), ("pt-br", "1.000.000"), ("id", "1.000.000"),
    # Django's zh_Hans formats have no group separator: as every amount the server writes in Chinese
    ("zh-hans", "1000000"),
])
def test_a_limit_is_grouped_the_locales_way(language, limit):
    with translation.override(language):
        assert number(1_000_000) == limit
        assert number(1_000_000.0) == limit
        assert number(0.0) == "0"
    assert limit in _amount_error(language)


def test_what_is_not_a_number_is_left_alone():
    assert number(True) is True
    assert number("a") == "a"
