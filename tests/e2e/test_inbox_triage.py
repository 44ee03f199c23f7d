"""Triage in the reviewer pages, at desktop (1366x900) and phone (390x844) size: the request page
follows a decision made elsewhere (status, countdown, the outcome in place of the form); a decision
moves on to the next request with an Undo that recalls it (and is sent by the server when the window
closes); the reading pane beside the list; "rita is viewing"; Approve on screen without scrolling;
one confirmation rule for the button and the a key; inbox zero; the stats page's number columns and
its chart opening on today's bar."""

import re

import inbox_e2e
import pytest
from inbox_e2e import T, make_requests, run, statuses, tag, wait_status
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
sizes = pytest.mark.parametrize("size", list(SIZES))


def in_view(page, selector):
    """The element is inside the window as it is now, without scrolling."""
    return page.evaluate("""(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth; }""",
                         selector)


@sizes
def test_the_request_page_follows_a_decision_made_elsewhere(people, live_stack, size):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "group": "reviewers", "description": f"Pay rent {t}",
                                        "timeout": 600}])
    finn = people("finn", viewport=SIZES[size])
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(page.locator("#detail-status")).to_have_text("Pending")
    expect(page.locator(".detail-head .countdown")).to_be_visible()
    page.locator("#feedback").fill("half-written thoughts")

    # rita opens it too: finn sees her there
    rita = people("rita", viewport=SIZES["desktop"])
    rita.page.goto(f"/inbox/{rid}/")
    expect(page.locator("#viewers")).to_have_text("rita is viewing this request", timeout=T)
    expect(rita.page.locator("#viewers")).to_have_text("finn is viewing this request", timeout=T)

    run(live_stack, f"services.decide({rid!r}, user('rita'), 'reject', feedback='Paid already')")
    expect(page.locator("#detail-status")).to_have_text("Rejected", timeout=T)
    expect(page.locator("#outcome")).to_contain_text("Rejected by rita")
    expect(page.locator("#outcome")).to_contain_text("Paid already")
    expect(page.locator(".detail-head .countdown")).to_have_count(0)
    expect(page.locator("#decide-form")).to_have_count(0)
    expect(page.locator("#action-bar")).to_have_count(0)
    expect(page.locator("#quorum-panel")).to_contain_text("Rejected by rita")
    expect(page.get_by_text(re.compile("Reload the page"))).to_have_count(0)
    finn.shoot(f"followed-{size}")
    rita.page.goto("/inbox/")  # rita leaves: finn's page says so
    expect(page.locator("#viewers")).to_be_hidden(timeout=T)


@sizes
def test_approve_moves_on_with_an_undo(people, live_stack, size):
    t = tag()
    # the newest first, as the list shows them
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Triage {i} {t}", "risk": "low"}
                                     for i in (3, 2, 1)])
    first, second, third = ids[2], ids[1], ids[0]
    finn = people("finn", viewport=SIZES[size])
    page = finn.page
    page.goto(f"/inbox/{first}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    # Approve is on screen without scrolling, at either size
    assert in_view(page, "#approve") and in_view(page, "#reject")
    finn.shoot(f"request-page-{size}")
    page.locator("#approve").click()  # low risk, no edits: no question, an Undo instead
    page.wait_for_url(re.compile(rf"/inbox/{second}/\?"), timeout=T)
    toast = page.locator("#undo-toast")
    expect(toast).to_be_visible()
    expect(toast).to_contain_text(f"Approved: Triage 1 {t}")
    # nothing slow between the toast and the click (a shell in the live stack takes seconds under
    # load, and the window is the stack's AGUI_UNDO_SECONDS): that the decision was held, not sent,
    # is read after the Undo: still pending, no decision recorded
    page.locator("#undo-button").click()
    page.wait_for_url(re.compile(rf"/inbox/{first}/$"), timeout=T)
    expect(page.locator(".flash-messages")).to_contain_text("Undone")
    expect(page.locator("#approve")).to_be_visible()
    finn.shoot(f"undone-{size}")
    assert statuses(live_stack, [first])[first][0] == "pending"
    assert run(live_stack, f"result = ApprovalRequest.objects.get(pk={first!r}).decisions.count()") == 0

    # the a key: the same rule as the button (low risk: at once), then the server sends it
    page.locator("body").click(position={"x": 5, "y": 200})
    page.keyboard.press("a")
    page.wait_for_url(re.compile(rf"/inbox/{second}/\?"), timeout=T)
    expect(page.locator("#decide-dialog")).to_be_hidden()
    assert wait_status(live_stack, first, "approved") == "approved"
    expect(page.locator("#undo-toast")).to_be_hidden(timeout=T)  # the window closed: nothing to undo
    assert third  # still waiting for finn
    assert statuses(live_stack, [second, third]) == {second: ["pending", "", None], third: ["pending", "", None]}


def test_a_held_approval_that_came_second_is_told_not_sent(people, live_stack):
    """The toast used to say "Sent." when the window closed: finn's approval, held while rita's
    rejection went through the API, was dropped, and nothing he saw said so."""
    import httpx

    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "group": "reviewers", "description": f"Raced {t}",
                                        "risk": "low", "timeout": 600}])
    key = run(live_stack, "from rest_framework.authtoken.models import Token\n"
                          "result = Token.objects.get_or_create(user=user('rita'))[0].key")
    finn = people("finn", viewport=SIZES["desktop"])
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.locator("#approve").click()  # low risk, no edits: held at once, with an Undo
    toast = page.locator("#undo-toast")
    expect(toast).to_contain_text(f"Approved: Raced {t}", timeout=T)
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    # inside finn's window (AGUI_UNDO_SECONDS), rita rejects through the API, which holds nothing
    rejected = httpx.post(f"{live_stack.url}/api/approvals/{rid}/decide/", json={"decision": "reject", "feedback": "Paid already"},
                          headers={"Authorization": f"Token {key}"}, timeout=10)
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected", rejected.text
    # on the page the decision led to (not this request's own): the toast names its request
    expect(toast).to_contain_text(f"Not sent: rita decided “Raced {t}” first.", timeout=T)
    expect(toast).to_be_visible()
    finn.shoot("not-sent")
    assert statuses(live_stack, [rid])[rid][0] == "rejected"


def test_a_held_approval_of_a_request_its_requester_withdrew_says_withdrew(people, live_stack):
    """"Not sent: alice decided “…” first." read as alice approving her own transfer: she withdrew it."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "group": "reviewers", "description": f"Taken back {t}",
                                        "risk": "low", "timeout": 600}])
    finn = people("finn", viewport=SIZES["desktop"])
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.locator("#approve").click()
    toast = page.locator("#undo-toast")
    expect(toast).to_contain_text(f"Approved: Taken back {t}", timeout=T)
    run(live_stack, f"services.cancel({rid!r}, user('alice'))")  # her Withdraw, inside finn's window
    expect(toast).to_contain_text(f"Not sent: alice withdrew “Taken back {t}” before it was sent.", timeout=T)
    expect(toast).not_to_contain_text("decided")
    assert statuses(live_stack, [rid])[rid][0] == "cancelled"
    page.goto(f"/inbox/?status=cancelled&q={t}")
    expect(page.locator(f'tr[data-approval-id="{rid}"] .decider')).to_contain_text("withdrawn by alice")


def test_a_not_sent_toast_on_the_next_requests_page_names_its_request(people, live_stack):
    """A decision leads to the next request's page, where its toast follows it: "Not sent: rita decided
    this request first." read there as the next request's, which nobody had decided."""
    import httpx

    t = tag()
    # made older, the second is the next one down the list after the first (inbox.next_waiting)
    second, first = make_requests(live_stack, [
        {"requester": "alice", "group": "reviewers", "description": f"Waiting next {t}", "risk": "low", "timeout": 600},
        {"requester": "alice", "group": "reviewers", "description": f"Raced first {t}", "risk": "low", "timeout": 600}])
    key = run(live_stack, "from rest_framework.authtoken.models import Token\n"
                          "result = Token.objects.get_or_create(user=user('rita'))[0].key")
    finn = people("finn", viewport=SIZES["desktop"])
    page = finn.page
    page.goto(f"/inbox/{first}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.locator("#approve").click()
    page.wait_for_url(re.compile(rf"/inbox/{second}/\?.*held="), timeout=T)
    toast = page.locator("#undo-toast")
    expect(toast).to_contain_text(f"Approved: Raced first {t}", timeout=T)
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    rejected = httpx.post(f"{live_stack.url}/api/approvals/{first}/decide/", json={"decision": "reject", "feedback": "No"},
                          headers={"Authorization": f"Token {key}"}, timeout=10)
    assert rejected.status_code == 200, rejected.text
    expect(toast).to_contain_text(f"Not sent: rita decided “Raced first {t}” first.", timeout=T)
    expect(toast).not_to_contain_text("this request")
    assert statuses(live_stack, [second])[second][0] == "pending"


def test_undo_gives_back_what_the_reviewer_typed(people, live_stack):
    """Undo brought the request back with its arguments as asked and no feedback: the edit and the
    note the reviewer had undone it to fix were gone."""
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Undo draft {i} {t}", "timeout": 600}
                                     for i in (2, 1)])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{ids[1]}/?next=/inbox/%3Fq%3D{t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.locator("#arg__amount").fill("450")
    page.locator("#feedback").fill("my note")
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_url(re.compile(rf"/inbox/{ids[0]}/\?"), timeout=T)
    page.locator("#undo-button").click()
    page.wait_for_url(re.compile(rf"/inbox/{ids[1]}/$"), timeout=T)
    expect(page.locator("#arg__amount")).to_have_value("450")
    expect(page.locator("#feedback")).to_have_value("my note")
    expect(page.locator("#draft-note")).to_contain_text("What you typed here before was put back.")
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 450")
    finn.shoot("undo-draft")
    assert statuses(live_stack, [ids[1]])[ids[1]][0] == "pending"


def test_the_reviewers_other_tab_shows_the_held_edit_as_his(people, live_stack):
    """finn's second tab, during his undo window, said "You can see this request, but finance decides
    it" and showed the amount as asked, not the 450 he was sending."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Two tabs {t}", "timeout": 600}])
    finn = people("finn")
    other = finn.page.context.new_page()
    for page in (finn.page, other):
        page.goto(f"/inbox/{rid}/")
        expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    finn.page.locator("#arg__amount").fill("450")
    finn.page.locator("#approve").click()
    finn.page.locator("#decide-dialog-confirm").click()
    expect(finn.page.locator("#undo-toast")).to_contain_text("Approved with edits", timeout=T)
    expect(other.locator("#outcome-heading")).to_have_text("You approved this request with edits", timeout=T)
    expect(other.locator("#held-diff")).to_contain_text("Amount: 500 → 450")
    expect(other.locator("#not-yours")).to_have_count(0)
    other.screenshot(path=str(finn.artifacts_dir / f"{finn.prefix}-held-other-tab.png"), full_page=True)
    assert wait_status(live_stack, rid, "modified") == "modified"


@sizes
def test_one_confirmation_rule_for_the_button_and_the_key(people, live_stack, size):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Risky {t}", "risk": "critical"}])
    page = people("finn", viewport=SIZES[size]).page
    page.goto(f"/inbox/{rid}/")
    dialog = page.locator("#decide-dialog")
    page.locator("#approve").click()
    expect(dialog).to_be_visible()
    expect(page.locator("#decide-dialog-title")).to_have_text("Approve as requested?")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.locator("body").click(position={"x": 5, "y": 200})
    page.keyboard.press("a")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    assert statuses(live_stack, [rid])[rid][0] == "pending"


def test_the_reading_pane_and_list_triage(people, live_stack):
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Pane {i} {t}", "risk": "low"}
                                     for i in (3, 2, 1)])
    finn = people("finn", viewport=SIZES["desktop"])
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    pane = page.locator("#reading-pane")
    expect(pane).to_be_visible()
    page.keyboard.press("j")
    expect(pane.locator(".preview-title")).to_have_text(f"Pane 1 {t}", timeout=T)
    expect(pane.locator(".excerpt")).to_contain_text("Please run transfer_money")
    # a click on a row reads it in the pane, without leaving the list (its link opens its page)
    page.locator(f'#approval-rows tr[data-approval-id="{ids[1]}"] td.col-risk').click()
    expect(pane.locator(".preview-title")).to_have_text(f"Pane 2 {t}", timeout=T)
    assert page.url.endswith(f"/inbox/?q={t}")
    finn.shoot("reading-pane")
    page.keyboard.press("k")
    expect(pane.locator(".preview-title")).to_have_text(f"Pane 1 {t}", timeout=T)
    page.keyboard.press("a")  # low risk: at once; the next one is selected and shown
    expect(page.locator(f'#approval-rows tr[data-approval-id="{ids[2]}"]')).to_have_count(0, timeout=T)
    expect(page.locator("#undo-toast")).to_be_visible()
    expect(page.locator("#approval-rows tr.selected")).to_have_attribute("data-approval-id", ids[1])
    expect(pane.locator(".preview-title")).to_have_text(f"Pane 2 {t}", timeout=T)
    page.keyboard.press("u")
    expect(page.locator(f'#approval-rows tr[data-approval-id="{ids[2]}"]')).to_have_count(1, timeout=T)
    expect(page.locator("#undo-toast")).to_be_hidden()
    assert statuses(live_stack, [ids[2]])[ids[2]][0] == "pending"
    # Undo brings back the request it recalled, selected and in the pane
    expect(page.locator("#approval-rows tr.selected")).to_have_attribute("data-approval-id", ids[2])
    expect(pane.locator(".preview-title")).to_have_text(f"Pane 1 {t}", timeout=T)
    # the pane's own buttons follow the same rule (a rejection always asks for its reason)
    pane.locator("#preview-reject").click()
    expect(page.locator("#decide-dialog")).to_be_visible()
    page.locator("#decide-dialog-reason").fill("Not now")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#undo-toast")).to_contain_text(f"Rejected: Pane 1 {t}")
    assert wait_status(live_stack, ids[2], "rejected") == "rejected"
    assert statuses(live_stack, [ids[1]])[ids[1]][0] == "pending"


def test_inbox_zero(people, live_stack):
    # nothing may wait for finn: what earlier tests left is cancelled
    run(live_stack, """
from approvals import inbox
for r in ApprovalRequest.objects.filter(inbox.mine(user('finn')), status='pending'):
    services.cancel(r.pk)
""")
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Last one {tag()}", "risk": "low"}])
    for size, viewport in SIZES.items():
        finn = people("finn", viewport=viewport)
        page = finn.page
        page.goto("/inbox/")
        expect(page.locator("#inbox-zero")).to_have_count(0)
        finn.shoot(f"inbox-before-zero-{size}")
    page.goto(f"/inbox/{rid}/")
    page.locator("#approve").click()
    page.wait_for_url(re.compile(r"/inbox/\?held="), timeout=T)
    expect(page.locator("#inbox-zero")).to_contain_text("You're all caught up")
    expect(page.locator("#bulk-bar")).to_be_hidden()
    finn.shoot("inbox-zero-phone")


@sizes
def test_stats_numbers_line_up_and_the_chart_opens_on_today(people, live_stack, size):
    t = tag()
    run(live_stack, f"""
ids = [make_request('alice', description=f'Stats {{i}} {t}').pk for i in range(2)]
services.decide(ids[0], user('finn'), 'approve')
""")
    page = people("finn", viewport=SIZES[size]).page
    page.goto("/inbox/stats/")
    expect(page.locator("#stats-chart")).to_be_visible()
    # the last bar is today's: it is inside the chart's visible box as the page opens
    visible = page.evaluate("""() => {
        const box = document.querySelector('.chart-box').getBoundingClientRect();
        const bars = Array.from(document.querySelectorAll('#stats-chart g.bar'));
        const r = bars[bars.length - 1].getBoundingClientRect();
        return {box: [box.left, box.right], bar: [r.left, r.right], n: bars.length};
    }""")
    assert visible["box"][0] <= visible["bar"][0] and visible["bar"][1] <= visible["box"][1] + 1, visible
    edges = page.evaluate("""() => {
        const table = document.getElementById('per-tool');
        const heads = Array.from(table.querySelectorAll('thead th'));
        const cells = Array.from(table.querySelector('tbody tr').children);
        return heads.map((h, i) => ({num: h.classList.contains('num'), shown: h.getBoundingClientRect().width > 1,
            head: h.getBoundingClientRect().right, cell: cells[i].getBoundingClientRect().right,
            align: getComputedStyle(cells[i]).textAlign, headAlign: getComputedStyle(h).textAlign}));
    }""")
    for e in (e for e in edges if e["num"]):
        assert e["align"] == ("right" if size == "desktop" else "left"), e
        if size == "desktop":  # a number's right edge is its header's
            assert e["headAlign"] == "right" and abs(e["head"] - e["cell"]) < 1, e
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_the_chart_scrolls_from_the_keyboard_on_a_phone(people, live_stack):
    """At 375 px the chart scrolls sideways in its box, which no key could reach (axe:
    scrollable-region-focusable): a keyboard user saw only the last days."""
    page = people("finn", viewport={"width": 375, "height": 667}).page
    page.goto("/inbox/stats/")
    box = page.locator(".chart-box")
    expect(box).to_be_visible()
    assert page.evaluate("() => { const b = document.querySelector('.chart-box'); return b.scrollWidth > b.clientWidth; }")
    box.focus()
    expect(box).to_be_focused()
    expect(box).to_have_accessible_name(re.compile("Requests per (day|hour), by outcome"))
    before = box.evaluate("b => b.scrollLeft")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("before => document.querySelector('.chart-box').scrollLeft !== before", arg=before)
