"""The inbox pages for screen-reader, keyboard and speech-input users (the accessibility probe's F7,
F8, F12, F13): a decision on the request page is heard and the next request named; the single-key
shortcuts can be switched off; the live regions say a short thing once; the single reject dialog and
the audit link say what they are."""

import re
import time

import inbox_e2e
from inbox_e2e import T, make_requests, run, statuses, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def focused_id(page):
    return page.evaluate("document.activeElement && document.activeElement.id")


def test_a_decision_on_the_request_page_is_heard_and_the_next_request_named(people, live_stack):
    """F7: the next request opened with the focus on <body>, a toast present at load (not read out)
    and a title that differed only by its count."""
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Heard {i} {t}", "risk": "low"}
                                     for i in (2, 1)])
    first, second = ids[1], ids[0]  # the newest first, as the list and the triage order have them
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{first}/")
    expect(page).to_have_title(re.compile(rf"^(\(\d+\) )?Heard 1 {t} · transfer_money · Inbox · agui-inbox$"))
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    assert focused_id(page) in ("", None)  # a page opened plainly keeps the browser's focus
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("a")  # low risk, no edits: held at once
    page.wait_for_url(re.compile(rf"/inbox/{second}/\?(.*&)?held="), timeout=T)
    expect(page).to_have_title(re.compile(rf"^(\(\d+\) )?Heard 2 {t} · transfer_money · Inbox · agui-inbox$"))
    expect(page.locator("#detail-title")).to_be_focused()
    assert focused_id(page) == "detail-title"
    # the decision and that this is another request (the page's line), written to the polite region
    # after the page settled (read out, unlike the toast and the line that were there at load)
    expect(page.locator("#inbox-live")).to_have_text(re.compile(
        rf"^Your decision on the previous request, “Heard 1 {t}”: Approved\. "
        r"This page shows the next request waiting for you(; Undo with u\.|\.)$"), timeout=T)
    finn.shoot("heard")


def test_the_last_decision_lands_on_the_list_and_is_heard(people, live_stack):
    # nothing else may wait for finn: the last decision leads to the list
    run(live_stack, """
from approvals import inbox
for r in ApprovalRequest.objects.filter(inbox.mine(user('finn')), status='pending'):
    services.cancel(r.pk)
""")
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Last heard {t}", "risk": "low"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    page.locator("#approve").click()
    page.wait_for_url(re.compile(r"/inbox/\?held="), timeout=T)
    expect(page.locator("#inbox-title")).to_be_focused()
    expect(page.locator("#inbox-live")).to_have_text(re.compile(rf"^Approved: Last heard {t}(; Undo with u\.|\.)$"),
                                                     timeout=T)


def test_single_key_shortcuts_can_be_switched_off(people, live_stack):
    """F8 (WCAG 2.1.4): j, a, ? and the rest acted on the page whatever the reviewer wanted; a approved a
    low-risk request at once. Off (on /settings/), no single key acts; on (the default), they do."""
    t = tag()
    # support: rita alone decides them (finn's pages stay as the other tests expect)
    [low, high] = make_requests(live_stack, [
        {"requester": "alice", "group": "support", "description": f"Keys low {t}", "risk": "low"},
        {"requester": "alice", "group": "support", "description": f"Keys high {t}", "risk": "high"}])
    rita = people("rita")
    page = rita.page
    switched_back = False
    try:
        page.goto("/settings/")
        box = page.get_by_label("Single-key shortcuts in the inbox")
        expect(box).to_be_checked()  # on unless switched off
        box.uncheck()
        page.get_by_role("button", name="Save").click()
        expect(page.locator(".flash-messages")).to_contain_text("Your settings are saved.")
        expect(box).not_to_be_checked()

        # the list: the hint says they are off and where to switch them on
        page.goto(f"/inbox/?q={t}")
        expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        hint = page.locator("#inbox-hint .keyboard-hint")
        expect(hint).to_have_text("Single-key shortcuts are off: switch them on in your settings.")
        expect(hint.get_by_role("link", name="your settings")).to_have_attribute("href", "/settings/")
        expect(page.locator("#keys-off")).to_contain_text("Single-key shortcuts are off")
        high_link = page.locator(f'#approval-rows tr[data-approval-id="{high}"] a.row-link')
        page.locator("#pending-count").click()  # the focus on the page, outside any control
        # each key's handler runs as the key is pressed: what it would do is there when press returns
        page.keyboard.press("j")
        assert not page.evaluate("Boolean(document.activeElement.closest('#approval-rows'))")
        assert page.locator("#approval-rows tr.selected").count() == 0
        page.keyboard.press("?")
        expect(page.locator("#keys-dialog")).to_be_hidden()
        high_link.focus()  # the row is selected (as a click or Tab does)
        expect(page.locator(f'#approval-rows tr[data-approval-id="{high}"]')).to_have_class(re.compile("selected"))
        page.keyboard.press("a")  # on: the dialog a high-risk approval asks first
        expect(page.locator("#decide-dialog")).to_be_hidden()
        page.keyboard.press("r")  # on: the reject dialog
        expect(page.locator("#decide-dialog")).to_be_hidden()
        expect(high_link).to_be_focused()

        # the request page: a approves a low-risk request at once when on
        page.goto(f"/inbox/{low}/")
        expect(page.locator("#action-bar .keyboard-hint")).to_have_text(
            "Single-key shortcuts are off: switch them on in your settings.")
        page.locator("body").click(position={"x": 5, "y": 300})
        page.keyboard.press("a")
        expect(page.locator("#decide-form")).not_to_have_attribute("aria-busy", "true")  # nothing was sent
        page.keyboard.press("e")
        expect(page.locator("#arg__from_account")).not_to_be_focused()
        assert page.url.endswith(f"/inbox/{low}/")
        assert statuses(live_stack, [low, high]) == {low: ["pending", "", None], high: ["pending", "", None]}

        # on again: the keys work as before
        page.goto("/settings/")
        expect(box).not_to_be_checked()
        box.check()
        page.get_by_role("button", name="Save").click()
        expect(page.locator(".flash-messages")).to_contain_text("Your settings are saved.")
        switched_back = True
        page.goto(f"/inbox/?q={t}")
        expect(page.locator("#inbox-hint .keyboard-hint")).to_contain_text("j/k move")
        page.locator("#pending-count").click()
        page.keyboard.press("j")
        expect(page.locator("#approval-rows tr.selected a.row-link")).to_be_focused()
        page.keyboard.press("?")
        expect(page.locator("#keys-dialog")).to_be_visible()
        expect(page.locator("#keys-off")).to_have_count(0)
        page.keyboard.press("Escape")
        high_link.focus()
        page.keyboard.press("a")
        expect(page.locator("#decide-dialog")).to_be_visible()
        expect(page.locator("#decide-dialog")).to_contain_text(f"Keys high {t}")
        page.keyboard.press("Escape")
        page.goto(f"/inbox/{low}/")
        page.locator("body").click(position={"x": 5, "y": 300})
        page.keyboard.press("e")
        expect(page.locator("#arg__from_account")).to_be_focused()
    finally:
        if not switched_back:  # the other tests' rita has them on
            run(live_stack, "from people.models import Profile\n"
                            "Profile.objects.filter(user__username='rita').update(inbox_keys=True)")


def test_the_reading_pane_is_not_a_live_region(people, live_stack):
    """F12a: each j / k queued the whole request (hundreds of characters) for reading."""
    t = tag()
    make_requests(live_stack, [{"requester": "alice", "description": f"Pane quiet {i} {t}"} for i in (2, 1)])
    page = people("finn").page  # 1280 px wide: the pane is beside the list
    page.goto(f"/inbox/?q={t}")
    pane = page.locator("#reading-pane")
    expect(pane).to_be_visible()
    page.keyboard.press("j")
    expect(pane.locator(".preview-title")).to_have_text(f"Pane quiet 1 {t}", timeout=T)
    page.keyboard.press("j")
    expect(pane.locator(".preview-title")).to_have_text(f"Pane quiet 2 {t}", timeout=T)
    # neither the pane nor anything around it is live; its countdown stays off
    assert page.evaluate("""() => { const p = document.getElementById('reading-pane');
        return [p.getAttribute('aria-live'), p.getAttribute('role'), Boolean(p.closest('[aria-live]:not([aria-live=off])'))]; }""") \
        == [None, None, False]
    expect(pane.locator(".countdown")).to_have_attribute("aria-live", "off")
    # what the focus reads is the headline, on the row's link
    expect(page.locator("#approval-rows tr.selected a.row-link")).to_be_focused()


def test_the_diff_preview_is_said_once_the_typing_settles(people, live_stack):
    """F12b: "Amount: 500 → 4", "→ 45", "→ 450" were each read out as they were typed."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Typed {t}"}])
    page = people("finn").page
    page.clock.install()  # the page's timers on a clock the test moves: "not yet" is then certain
    page.goto(f"/inbox/{rid}/")
    amount = page.locator("#arg__amount")
    expect(amount).to_have_value("500")
    expect(page.locator(".diff-preview-box")).not_to_have_attribute("aria-live", re.compile("."))
    live = page.locator("#diff-live")
    expect(live).to_have_attribute("aria-live", "polite")
    expect(live).to_have_text("")  # nothing said as the page opens
    page.evaluate("""() => { window.__said = [];
        new MutationObserver(() => window.__said.push(document.getElementById('diff-live').textContent))
          .observe(document.getElementById('diff-live'), {childList: true, characterData: true, subtree: true}); }""")
    page.clock.pause_at(int(time.time() * 1000) + 60_000)  # from here on, time moves only when told
    amount.select_text()
    page.keyboard.type("450")  # three input events: 4, 45, 450
    # the visible preview follows each keystroke at once
    expect(page.locator("#diff-preview")).to_have_text("Amount: 500 → 450")
    expect(live).to_have_text("")  # not yet: the typing may go on
    page.clock.run_for(650)
    expect(live).to_have_text("")
    page.clock.run_for(100)  # 700 ms after the last keystroke
    expect(live).to_have_text("Amount: 500 → 450")
    assert page.evaluate("window.__said") == ["Amount: 500 → 450"]  # once, and none of 4 or 45


def test_the_single_reject_dialog_and_the_audit_link_say_what_they_are(people, live_stack):
    """F13: "One reason for all of them" for one request; an audit link named "all"."""
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Named {i} {t}"} for i in (2, 1)])
    page = people("finn").page
    page.goto(f"/inbox/?q={t}")
    page.locator(f'#approval-rows tr[data-approval-id="{ids[1]}"] a.row-link').focus()
    page.keyboard.press("r")
    expect(page.locator("#decide-dialog-title")).to_have_text("Reject this request?")
    expect(page.locator("#decide-dialog-hint")).to_have_text("Ctrl+Enter rejects, Esc cancels.")
    page.keyboard.press("Escape")
    for rid in ids:
        page.locator(f"#sel-{rid}").check()
    page.locator("#bulk-reject").click()
    expect(page.locator("#decide-dialog-title")).to_have_text("Reject 2 requests?")
    expect(page.locator("#decide-dialog-hint")).to_have_text("One reason for all of them; Ctrl+Enter rejects, Esc cancels.")
    page.keyboard.press("Escape")

    page.goto(f"/inbox/{ids[0]}/")
    link = page.get_by_role("link", name="the whole audit trail")
    expect(link).to_have_attribute("href", f"/audit/?request={ids[0]}")
    expect(page.get_by_role("link", name="all", exact=True)).to_have_count(0)
