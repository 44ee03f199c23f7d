"""Text follows the reader's own font size (WCAG 1.4.4): a browser set to larger text gets larger text
on every page, since the sizes are relative to the root's (the body's was 14 px whatever the browser
said), and no text a person reads is smaller than SMALLEST at the browser's default size (badges and
key hints nested in small print came out at 8-10 px)."""

from chat_helpers import T, new_chat, send
from playwright.sync_api import expect

SMALLEST = 11.9  # CSS px at the default 16 px: the floor, --smallest (.75rem), less rounding

# each visible text's element and its computed size, smallest first
SIZES = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    if (!n.textContent.trim() || !e || !e.getClientRects().length) continue;
    if (e.closest('[hidden], [aria-hidden=true], svg')) continue;  // the chart's own lettering scales with it
    const s = getComputedStyle(e), r = e.getBoundingClientRect();
    if (s.visibility !== 'visible' || r.width < 2 || r.height < 2) continue;  // clipped: for screen readers only
    out.push([parseFloat(s.fontSize), e.tagName.toLowerCase() + '.' + String(e.className).split(' ').join('.'),
              n.textContent.trim().slice(0, 30)]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}"""


def smallest_texts(page, below):
    return [s for s in page.evaluate(SIZES) if s[0] < below]


def body_size(page):
    return page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")


def larger_text(page, px):
    """The browser's own font size setting (Settings > Appearance > Font size), as a reader sets it."""
    page.context.new_cdp_session(page).send("Page.setFontSizes", {"fontSizes": {"standard": px, "fixed": px}})


def _pages_with_a_request(people):
    alice = people("alice")
    new_chat(alice.page)
    send(alice.page, "Transfer $29 from account 1234567890 to account 0987654321")
    card = alice.page.locator(".approval-card")
    expect(card.locator(".status-badge")).to_have_text("Pending", timeout=T)
    rid = card.get_attribute("data-approval-id")
    return alice, rid, ["/inbox/", f"/inbox/{rid}/", "/inbox/stats/", "/audit/", "/settings/"]


def test_no_text_is_smaller_than_the_floor(people):
    alice, rid, urls = _pages_with_a_request(people)
    assert smallest_texts(alice.page, SMALLEST) == []
    finn = people("finn")
    for url in urls:
        finn.page.goto(url)
        expect(finn.page.locator("main")).to_be_visible()
        assert (url, smallest_texts(finn.page, SMALLEST)) == (url, [])
    admin = people("admin")
    for url in ["/policies/", "/policies/transfer_money/"]:
        admin.page.goto(url)
        expect(admin.page.locator("main")).to_be_visible()
        assert (url, smallest_texts(admin.page, SMALLEST)) == (url, [])


def test_a_larger_browser_font_size_makes_every_text_larger(people):
    alice, rid, urls = _pages_with_a_request(people)
    assert body_size(alice.page) == 14
    larger_text(alice.page, 24)  # 1.5 times the default
    alice.page.reload()
    expect(alice.page.locator(".approval-card .status-badge")).to_have_text("Pending", timeout=T)
    assert body_size(alice.page) == 21
    assert smallest_texts(alice.page, SMALLEST * 1.5) == []
    # the conversation still fits the window's width
    assert alice.page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    finn = people("finn")
    larger_text(finn.page, 24)
    for url in urls:
        finn.page.goto(url)
        expect(finn.page.locator("main")).to_be_visible()
        assert body_size(finn.page) == 21
        assert (url, smallest_texts(finn.page, SMALLEST * 1.5)) == (url, [])
