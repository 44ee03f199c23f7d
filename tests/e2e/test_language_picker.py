"""The header's language picker with the keyboard: an arrow key changes the select's value and
nothing else (WCAG 3.2.2 On Input); its Apply button sends the choice, and the page that comes back
in that language has focus on the picker, not on <body>."""

import inbox_e2e
import pytest
from inbox_e2e import T, run
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


@pytest.fixture(autouse=True)
def _back_to_english(live_stack):
    """The picker saves the choice in the live stack's database: later tests meet finn in English."""
    yield
    run(live_stack, "from people.models import Profile\nProfile.objects.all().delete()")


def test_an_arrow_key_on_the_picker_does_not_switch_the_language(people):
    page = people("finn").page
    page.goto("/inbox/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    before = page.url
    loads = []
    page.on("framenavigated", lambda frame: loads.append(frame.url) if frame == page.main_frame else None)
    select = page.locator("#language-select")
    select.focus()
    page.keyboard.press("ArrowDown")
    chosen = select.input_value()
    assert chosen != "en", "ArrowDown changes a closed select's value in Chromium"
    page.keyboard.press("ArrowDown")
    chosen = select.input_value()
    # a round trip to the server: had the arrow sent the form, its navigation would have begun by now
    page.evaluate("() => fetch('/healthz').then((r) => r.status)")
    assert loads == [] and page.url == before
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert page.evaluate("() => document.activeElement.id") == "language-select"

    apply = page.get_by_role("button", name="Apply the language")
    expect(apply).to_be_visible()
    expect(apply).to_have_text("Apply")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "language-apply"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("lang", chosen, timeout=T)
    assert page.url == before
    # focus back where it was, on the picker showing the language now in force
    expect(page.locator("#language-select")).to_be_focused()
    expect(page.locator("#language-select")).to_have_value(chosen)
