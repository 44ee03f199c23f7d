"""The reviewer's pages on a phone (tests for the phone findings, /tmp/findings/phone.md): what a
decision leads to, a decision on its way over a slow network, key hints and tap targets on a touch
screen."""

import re
import time

import pytest
from chat_helpers import TOUCH
from inbox_e2e import T, make_requests, tag, wait_status
from playwright.sync_api import expect

IPHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(people):
    """phone("finn") -> a signed-in Session on a touch screen without a keyboard or a mouse."""
    return lambda who, viewport=None: people(who, viewport=viewport or IPHONE, **TOUCH)


def test_after_an_edited_approval_the_next_page_says_what_was_decided_and_that_it_is_another(phone, live_stack):
    t = tag()
    # an agent that retried: two requests with the same headline
    first, _second = make_requests(live_stack, [
        {"requester": "alice", "description": f"Transfer 500.00 USD ({t})", "risk": "high"},
        {"requester": "alice", "description": f"Transfer 500.00 USD ({t})", "risk": "high"}])
    finn = phone("finn")
    page = finn.page
    page.goto(f"/inbox/{first}/")
    page.locator("#arg__amount").fill("450")
    page.locator("#approve").tap()
    page.locator("#decide-dialog-confirm").tap()
    page.wait_for_url(re.compile(r"/inbox/[0-9a-f-]+/\?(.*&)?held="), timeout=T)  # the next one waiting
    assert first not in page.url
    toast = page.locator("#undo-toast .undo-text")
    # what was approved (the edited amount), not the agent's headline with the 500 it asked
    expect(toast).to_have_text("Approved with edits: Amount: 500 → 450")
    # whole on the phone's screen: wrapped, not cut with an ellipsis
    assert toast.evaluate("e => e.scrollWidth <= e.clientWidth + 1 && getComputedStyle(e).textOverflow !== 'ellipsis'")
    line = page.locator("#decided-line")
    expect(line).to_be_visible()
    expect(line).to_contain_text(f"Your decision on the previous request, “Transfer 500.00 USD ({t})”: "
                                 "Approved with edits: Amount: 500 → 450.")
    expect(line).to_contain_text("This page shows the next request waiting for you.")
    expect(line.get_by_role("link", name="Open it")).to_have_attribute("href", f"/inbox/{first}/")
    # said to a screen reader too, once the page settled
    expect(page.locator("#inbox-live")).to_contain_text("Approved with edits: Amount: 500 → 450", timeout=T)
    expect(page.locator("#inbox-live")).to_contain_text("next request waiting for you")
    assert wait_status(live_stack, first, "modified") == "modified"
    # the toast goes once the decision is sent; the line stays until the reviewer acts
    expect(page.locator("#undo-toast")).to_be_hidden(timeout=T)
    expect(line).to_be_visible()
    expect(line).to_contain_text("Amount: 500 → 450")
    finn.shoot("decided-line")


def test_a_decision_on_a_slow_network_says_it_is_on_its_way_then_that_no_answer_came(phone, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Slow network {t}", "risk": "medium"}])
    finn = phone("finn")
    page = finn.page
    held = []

    def hold_the_decision(route):
        if route.request.method == "POST" and 'name="action"\r\n\r\napprove' in (route.request.post_data or ""):
            held.append(route)  # answered when the test says so
        else:
            route.continue_()

    page.route(re.compile(rf"/inbox/{rid}/"), hold_the_decision)
    page.clock.install()
    page.goto(f"/inbox/{rid}/")
    approve, reject = page.locator("#approve"), page.locator("#reject")
    approve.tap()
    expect(approve).to_have_text("Approving…")
    expect(approve).to_be_disabled()
    expect(reject).to_be_disabled()  # a second tap has nothing to press: one decision
    assert len(held) == 1
    expect(page.locator("#decide-slow")).to_have_count(0)
    page.clock.run_for(16_000)  # no answer for a while: the bar says so
    slow = page.locator("#decide-slow")
    expect(slow).to_be_visible()
    expect(slow).to_contain_text("No answer from the server yet")
    expect(slow.get_by_role("link", name="Check this request’s state")).to_have_attribute("href", f"/inbox/{rid}/")
    finn.shoot("slow")
    held[0].continue_()  # the answer comes after all: on to the next request, with an Undo
    page.wait_for_url(re.compile(r"held="), timeout=T)
    assert wait_status(live_stack, rid, "approved") == "approved"


def box(locator):
    """Its width and height, measured on a frame where it is in the page. The list is drawn again at each
    inbox notice: bounding_box() of a row replaced meanwhile was None, and an element detached between
    the locator's match and the measure measured 0 × 0. Each try waits for the next frame and matches
    the locator again; a size of 0 stays 0 until the deadline and fails the caller's assertion."""
    deadline = time.monotonic() + T / 1000
    while True:
        size = locator.evaluate("""async e => {
            await new Promise(requestAnimationFrame);
            const r = e.getBoundingClientRect();
            return e.isConnected && r.width && r.height ? [r.width, r.height] : null; }""")
        if size or time.monotonic() > deadline:
            return tuple(size or (0, 0))


def test_touch_screens_get_no_key_hints_and_finger_sized_targets(phone, people, live_stack):
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Touch {t} {i}", "risk": "high"}
                                     for i in range(3)])
    finn = phone("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("#approval-rows tr")).to_have_count(3)
    # the list: no keys line, no "( / )" in the search box, ticks a finger can hit
    expect(page.locator(".keyboard-hint")).to_be_hidden()
    assert "/" not in page.locator("#search").get_attribute("placeholder")
    tick = page.locator(f'#approval-rows tr[data-approval-id="{ids[0]}"] .check-hit')
    w, h = box(tick)
    assert w >= 44 and h >= 44, (w, h)
    tick.tap()
    expect(page.locator(f"#sel-{ids[0]}")).to_be_checked()
    for button in page.locator("#bulk-bar button").all():
        assert box(button)[1] >= 44, box(button)
    page.locator("#bulk-bar button[value=approve]").tap()
    dialog = page.locator("#decide-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#decide-dialog-hint")).to_be_hidden()  # "Enter approves; Esc cancels."
    assert box(page.locator("#decide-dialog-confirm"))[1] >= 44
    page.locator("#decide-dialog-cancel").tap()

    # the request page: no key line by the buttons, Approve / Reject and the Undo a finger's size
    page.goto(f"/inbox/{ids[1]}/")
    expect(page.locator("#action-bar .keyboard-hint")).to_be_hidden()
    for name in ("#approve", "#reject"):
        w, h = box(page.locator(name))
        assert w >= 44 and h >= 44, (name, w, h)
    page.locator("#reject").tap()
    page.locator("#feedback").fill("not this one")
    page.locator("#reject").tap()
    page.wait_for_url(re.compile(r"held="), timeout=T)
    undo = page.locator("#undo-button")
    expect(undo).to_be_attached()
    expect(undo.locator("kbd")).to_be_hidden()  # no "u" on a phone
    # its size as the touch rules make it: the toast's 5 s window may have closed on a busy machine by now
    # (the button then hidden, with no box to measure)
    w, h = undo.evaluate("b => { const s = getComputedStyle(b); return [parseFloat(s.minWidth) || 0, "
                         "parseFloat(s.minHeight) || 0]; }")
    assert w >= 44 and h >= 44, (w, h)

    # a desktop keeps the keys and its dense layout
    desk = people("finn").page
    desk.goto(f"/inbox/{ids[2]}/")
    expect(desk.locator("#action-bar .keyboard-hint")).to_be_visible()
    assert box(desk.locator("#approve"))[1] < 44
    desk.goto(f"/inbox/?q={t}")
    expect(desk.locator(".keyboard-hint")).to_be_visible()
    assert "( / )" in desk.locator("#search").get_attribute("placeholder")
    assert box(desk.locator(f"#sel-{ids[2]}"))[1] < 20


def test_a_touch_tablet_has_no_keys_line(phone, live_stack):
    page = phone("finn", viewport={"width": 1080, "height": 810}).page  # an iPad in landscape, no keyboard
    page.goto("/inbox/")
    expect(page.locator("#inbox-title")).to_be_visible()
    expect(page.locator(".keyboard-hint")).to_be_hidden()


def test_a_decision_turned_away_by_a_lapsed_session_is_said_not_sent(phone, live_stack):
    from inbox_e2e import lapse, sign_in_here

    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Lapsed {t}", "risk": "high"}])
    finn = phone("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    page.locator("#arg__amount").fill("123")
    page.locator("#feedback").fill("lower, please")
    lapse(finn)  # the session ended on the server's side
    page.locator("#approve").tap()
    page.locator("#decide-dialog-confirm").tap()
    page.wait_for_url(re.compile(r"/accounts/login/\?next="), timeout=T)
    # the sign-in page says the decision did not go
    expect(page.locator(".flash-messages")).to_contain_text("Your session had ended, so what you just sent (a decision, a "
                                                           "message) was not sent.")
    finn.shoot("login-says-not-sent")
    sign_in_here(page, "finn")
    page.wait_for_url(re.compile(rf"/inbox/{rid}/"), timeout=T)
    note = page.locator("#draft-note")
    expect(note).to_contain_text("Your approval was not sent (your session had ended): send it again when you are ready.")
    expect(page.locator("#arg__amount")).to_have_value("123")
    assert wait_status(live_stack, rid, "pending", timeout=0) == "pending"


def test_a_decision_without_any_cookie_is_refused_in_words_for_people(phone, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"No cookies {t}", "risk": "low"}])
    finn = phone("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    page.context.clear_cookies()  # a private tab's data cleared, site data wiped
    page.locator("#approve").tap()
    refused = page.locator("#decide-not-sent")
    expect(refused).to_be_visible()
    expect(refused).to_have_text("Your decision was not sent. This page was opened before a sign-in, or the site's "
                                 "cookies were cleared, so it cannot send anything. Reload the page and try again: "
                                 "what you typed is kept.")
    assert "CSRF" not in refused.inner_text()


def test_requests_coming_in_above_leave_the_readers_place_alone(phone, live_stack):
    t = tag()
    make_requests(live_stack, [{"requester": "alice", "description": f"Older {t} {i}"} for i in range(7)])
    finn = phone("finn", viewport={"width": 412, "height": 839})
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    rows = page.locator("#approval-rows tr")
    expect(rows).to_have_count(7)
    rid = rows.nth(4).get_attribute("data-approval-id")
    top = f'document.querySelector(\'#approval-rows tr[data-approval-id="{rid}"]\').getBoundingClientRect().top'
    page.evaluate(f"window.scrollTo(0, window.scrollY + {top} - 200)")  # row 5 at y=200, reading
    before = page.evaluate(top)
    assert page.evaluate("window.scrollY") > 500 and abs(before - 200) < 2
    make_requests(live_stack, [{"requester": "alice", "description": f"Newer {t} {i}"} for i in range(2)])
    expect(rows).to_have_count(9, timeout=T)  # the two new ones, at the top of the list
    expect(page.locator("#approval-rows tr").first).to_contain_text(f"Newer {t}")
    after = page.evaluate(top)
    assert abs(after - before) < 2, (before, after)


def test_who_else_is_viewing_shows_by_the_action_bar(phone, people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Viewed {t}"}])
    finn = phone("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.locator("#feedback").scroll_into_view_if_needed()  # deciding, far below the header's line
    admin = people("admin").page
    admin.goto(f"/inbox/{rid}/")
    bar = page.locator("#viewers-bar")
    expect(bar).to_have_text("admin is viewing this request", timeout=T)
    expect(bar).to_be_in_viewport()
    assert page.locator("#action-bar").evaluate("(bar, pill) => bar.contains(pill)", bar.element_handle())
    admin.close()
    expect(bar).to_be_hidden(timeout=T)


# Android's Chrome: Notification exists and permission can be granted, but a page may not construct one
ANDROID_NOTIFICATION = """
window.Notification = class {
  constructor() { throw new TypeError("Failed to construct 'Notification': Illegal constructor. Use ServiceWorkerRegistration.showNotification() instead."); }
  static get permission() { return "granted"; }
  static requestPermission() { return Promise.resolve("granted"); }
};
"""


def test_a_browser_that_cannot_show_page_notifications_says_so(phone, live_stack):
    finn = phone("finn", viewport={"width": 412, "height": 915})
    page = finn.page
    page.add_init_script(ANDROID_NOTIFICATION)
    page.goto("/inbox/")
    toggle = page.get_by_label("Desktop notifications")
    toggle.tap()
    note = page.locator("#notify-note")
    expect(note).to_have_text("This browser cannot show notifications from a web page (Android phones cannot): "
                              "Mail settings can send you new requests instead.")
    expect(toggle).not_to_be_checked()
    expect(toggle).to_be_disabled()
    assert page.evaluate("localStorage.getItem('agui.inbox.notify')") is None


def test_ticking_a_row_far_down_brings_the_bulk_bar_to_the_bottom_of_the_screen(phone, live_stack):
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Bulk {t} {i}"} for i in range(6)])
    finn = phone("finn", viewport={"width": 412, "height": 839})
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("#approval-rows tr")).to_have_count(6)
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.wait_for_load_state("networkidle")  # the rows fetched again once the socket opened
    last = page.locator(f'#approval-rows tr[data-approval-id="{ids[0]}"] .check-hit')  # the oldest: last
    page.evaluate("(id) => document.getElementById('sel-' + id).scrollIntoView({block: 'center'})", ids[0])
    last.tap()
    bar = page.locator("#bulk-bar")
    expect(bar).to_contain_text("1 selected")
    expect(bar).to_be_in_viewport(ratio=1)
    expect(last).to_be_in_viewport()  # the bar does not cover the row just ticked
    assert bar.bounding_box()["y"] + bar.bounding_box()["height"] <= 839 + 1
