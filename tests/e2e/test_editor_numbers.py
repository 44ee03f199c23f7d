"""The arguments editor writes and reads numbers the page language's way: a French reviewer typed
"1234,56" (or "1 234,56"), as the page writes amounts, and was told "pas un nombre"; the bounds read
"≤ 1000000". The value sent stays a JSON number."""

import pytest
from inbox_e2e import make_requests, statuses, tag, wait_status
from playwright.sync_api import expect

NNBSP = "\u202f"  # Intl's French group separator


@pytest.fixture
def reviewer(people):
    """reviewer("finn", "fr-FR") -> a signed-in Session whose browser asks for that language."""
    return lambda who, locale: people(who, locale=locale)


def test_a_french_reviewer_types_amounts_the_french_way(reviewer, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Montant {t}"}])
    finn = reviewer("finn", "fr-FR")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    amount, approve = page.locator("#arg__amount"), page.locator("#approve")
    error = page.locator('[data-error-for="amount"]')
    expect(page.locator("#arg__amount-help")).to_contain_text(f"≤ 1{NNBSP}000{NNBSP}000")
    amount.fill("2000000")
    expect(error).to_have_text(f"doit être au plus 1{NNBSP}000{NNBSP}000")
    expect(approve).to_be_disabled()
    for typed in ("1234,56", "1 234,56", f"1{NNBSP}234,56", "1\u00a0234,56", "1234.56"):
        amount.fill(typed)
        expect(error).to_be_hidden()
        expect(approve).to_be_enabled()
        expect(page.locator("#diff-preview")).to_contain_text("1234.56")
    for typed in ("12 34,5", "1,2,3", "abc"):
        amount.fill(typed)
        expect(error).to_have_text("pas un nombre")
        expect(approve).to_be_disabled()
    amount.fill("1 234,56")
    approve.click()
    page.locator("#decide-dialog-confirm").click()
    assert wait_status(live_stack, rid, "modified") == "modified"  # approved with an edit
    assert statuses(live_stack, [rid])[rid][2]["amount"] == 1234.56  # a JSON number, not the text typed


def test_where_a_point_groups_digits_it_is_never_read_as_a_decimal(reviewer, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Valor {t}",
                                        "arguments": {"from_account": "1234567890", "to_account": "0987654321",
                                                      "amount": 500.5, "currency": "USD"}}])
    finn = reviewer("finn", "pt-BR")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    amount, error = page.locator("#arg__amount"), page.locator('[data-error-for="amount"]')
    expect(amount).to_have_value("500,5")  # shown as the page writes it, so read back the same
    expect(page.locator("#arg__amount-help")).to_contain_text("≤ 1.000.000")
    amount.fill("1.234,5")
    expect(error).to_be_hidden()
    expect(page.locator("#diff-preview")).to_contain_text("500.5 → 1234.5")
    amount.fill("1.234")
    expect(page.locator("#diff-preview")).to_contain_text("500.5 → 1234")
    amount.fill("1.5")  # "1.5" in a JavaScript sense: here a point separates thousands, so it is no number
    expect(error).to_have_text("não é um número")
