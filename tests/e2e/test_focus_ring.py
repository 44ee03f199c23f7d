"""The focus ring reaches 3:1 against what surrounds it (WCAG 1.4.11): the page background, white
cards and the dark header; and an inbox row link focused by script (a decision moves focus to the
next row) shows it too, though Chromium does not count such a focus as :focus-visible."""

import re

import inbox_e2e
from inbox_e2e import T, make_requests, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

# the focused element's ring, the colour behind it (its nearest painted ancestor) and the page's
RING = """(selector) => {
  const el = document.querySelector(selector);
  const painted = (node) => {
    for (; node; node = node.parentElement) {
      const bg = getComputedStyle(node).backgroundColor;
      if (!/^rgba\\(.*, 0\\)$/.test(bg) && bg !== "transparent") return bg;
    }
    return "rgb(255, 255, 255)";
  };
  const s = getComputedStyle(el);
  return {focused: document.activeElement === el, style: s.outlineStyle, width: parseFloat(s.outlineWidth),
          color: s.outlineColor, behind: painted(el.parentElement), page: getComputedStyle(document.body).backgroundColor,
          variable: getComputedStyle(document.documentElement).getPropertyValue("--focus").trim()};
}"""
WHITE = (255, 255, 255)


def rgb(text):
    text = text.strip()
    if text.startswith("#"):
        h = text[1:]
        if len(h) == 3:
            h = "".join(c * 2 for c in h)
        return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))
    return tuple(int(n) for n in re.findall(r"\d+", text)[:3])


def luminance(color):
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in color)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def ring(page, selector):
    r = page.evaluate(RING, selector)
    assert r["focused"], f"{selector} is not focused"
    assert r["style"] != "none" and r["width"] >= 2, f"{selector} shows no focus ring: {r}"
    return r


def test_the_focus_ring_contrasts_with_light_and_dark_surfaces(page):
    page.goto("/accounts/login/")
    page.locator("#id_username").focus()
    page.keyboard.press("Tab")  # a keyboard move: the password field matches :focus-visible
    r = ring(page, "#id_password")
    color = rgb(r["color"])
    assert rgb(r["variable"]) == color  # the ring is the --focus colour
    for name, surface in (("the page background", rgb(r["page"])), ("white", WHITE), ("behind the field", rgb(r["behind"]))):
        assert contrast(color, surface) >= 3, f"focus ring {r['color']} on {name} {surface}: {contrast(color, surface):.2f}:1"

    # the header is dark: its ring is its own colour, 3:1 against it as well
    page.locator("#language-select").focus()
    r = ring(page, "#language-select")
    assert contrast(rgb(r["color"]), rgb(r["behind"])) >= 3, r


def test_a_row_link_focused_by_script_shows_the_ring(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"{t} ring"}])
    page = people("finn").page
    page.goto("/inbox/")
    row = page.locator(f'tr[data-approval-id="{rid}"]')
    expect(row).to_be_visible(timeout=T)
    page.locator("h1").first.click()  # a pointer was used last: focus by script is not :focus-visible
    link = f'tr[data-approval-id="{rid}"] a.row-link'
    # found and focused in one evaluation: a locator's evaluate resolves the element first and calls
    # later, and a live refresh of the list between the two left it focusing a detached link
    page.evaluate("(selector) => document.querySelector(selector).focus()", link)
    r = ring(page, link)
    color = rgb(r["color"])
    for name, surface in (("the row", rgb(r["behind"])), ("white", WHITE)):
        assert contrast(color, surface) >= 3, f"focus ring {r['color']} on {name} {surface}: {contrast(color, surface):.2f}:1"
