"""The rule builder's "When" and "Then" are a rule's "if … then" (its condition and its action), not
a time: Chinese read 时间 ("time") and 当时 ("at that time") beside the selects, Portuguese "Na época"."""

import json

import pytest
from playwright.sync_api import expect

RULES = [{"name": "A", "when": {"path": "args.path", "op": "eq", "value": "/a"}, "action": "gate"}]


@pytest.fixture
def admin_in(people):
    return lambda locale: people("admin", locale=locale)


@pytest.mark.parametrize(("locale", "when", "then"), [
    ("zh-CN", "如果", "则"), ("pt-BR", "Se", "Então"), ("fr-FR", "Si", "Alors"), ("id", "Jika", "Maka"),
])
def test_the_rule_builder_says_if_and_then(admin_in, locale, when, then):
    page = admin_in(locale).page
    page.goto("/policies/read_file/")  # nothing is saved: the draft only fills the builder
    page.locator("#p-mode").select_option("conditional")
    details = page.locator("#conditions-details")
    if not details.evaluate("d => d.open"):
        page.locator("#conditions-details summary").click()
    page.locator("#p-conditions").fill(json.dumps(RULES))
    page.locator("#json-to-builder").click()
    card = page.locator('.rule-card[data-index="0"]')
    expect(card).to_be_visible()
    expect(card.locator(".rule-head .field:not(.field-name) label")).to_have_text(then)
    expect(card.locator(".field-match label")).to_have_text(when)
