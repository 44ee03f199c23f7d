"""The admin's pages on a touch tablet (tests for the phone findings P7, P8, P10): the simulator's
result where the page opens, the policy mode's whole sentence, wide tables that say they scroll."""

import pytest
from chat_helpers import TOUCH
from inbox_e2e import T
from playwright.sync_api import expect

IPAD_PORTRAIT = {"width": 810, "height": 1080}


@pytest.fixture
def tablet(people):
    return lambda who: people(who, viewport=IPAD_PORTRAIT, **TOUCH)


def test_simulate_opens_at_its_result_and_the_mode_shows_its_whole_sentence(tablet):
    admin = tablet("admin")
    page = admin.page
    page.goto("/policies/transfer_money/")
    mode = page.locator("#p-mode")
    mode.select_option("always")
    # the closed select shows its whole sentence: wider than the words it shows (and their arrow)
    fits = mode.evaluate("""m => {
      const probe = document.createElement('span');
      probe.style.font = getComputedStyle(m).font; probe.style.whiteSpace = 'pre'; probe.style.position = 'absolute';
      probe.textContent = Array.from(m.options).map(o => o.text).reduce((a, b) => a.length > b.length ? a : b);
      document.body.appendChild(probe);
      const need = probe.getBoundingClientRect().width; probe.remove();
      return [m.clientWidth, need];
    }""")
    assert fits[0] >= fits[1] + 24, fits
    page.locator("#simulate").tap()
    heading = page.locator("#sim-heading")
    expect(page.locator("#sim-summary")).to_be_visible(timeout=T)
    expect(heading).to_be_focused()
    expect(heading).to_be_in_viewport()
    assert page.evaluate("window.scrollY") > 0
    admin.shoot("simulated")


def test_a_table_wider_than_its_box_shows_it_goes_on(tablet):
    page = tablet("admin").page
    page.goto("/audit/")
    wrap = page.locator(".table-wrap").first
    expect(wrap).to_be_visible()
    # a shadow at the cut edge (drawn behind the table, hidden by a cover once the edge is reached)
    background = wrap.evaluate("w => getComputedStyle(w).backgroundImage")
    assert background.count("radial-gradient") == 2 and background.count("linear-gradient") == 2, background
    attachment = wrap.evaluate("w => getComputedStyle(w).backgroundAttachment")
    assert attachment.replace(" ", "").startswith("local,local,scroll,scroll"), attachment
