"""The inbox is live: a new request for finn's group appears without a reload (title badge, counter,
an optional browser notification), his keyboard selection stays where it was, and a request
decided elsewhere leaves his "waiting" list on its own."""

import re

import inbox_e2e
from inbox_e2e import FAKE_NOTIFICATION, T, make_requests, run, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def selected_id(page):
    return page.locator("#approval-rows tr.selected").get_attribute("data-approval-id")


def test_a_new_request_appears_live(people, live_stack):
    t = tag()
    [first] = make_requests(live_stack, [{"requester": "alice", "description": f"Earlier {t}", "group": "finance"}])
    finn = people("finn", init_script=FAKE_NOTIFICATION)
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(page.locator("#approval-rows tr[data-approval-id]")).to_have_count(1)
    page.get_by_label("Desktop notifications").check()  # the fake Notification grants permission

    # finn's place: the first row, selected with j (focus on its link)
    page.keyboard.press("j")
    expect(page.locator("#approval-rows tr.selected")).to_have_attribute("data-approval-id", first)
    waiting = int(page.locator("#pending-count").inner_text())

    [new] = make_requests(live_stack, [{"requester": "alice", "description": f"Pay the plumber {t}",
                                        "group": "finance", "risk": "high", "timeout": 90}])
    row = page.locator(f'#approval-rows tr[data-approval-id="{new}"]')
    expect(row).to_be_visible(timeout=T)
    expect(row).to_contain_text(f"Pay the plumber {t}")
    expect(row.locator(".risk")).to_have_text("high")
    expect(row.locator(".countdown")).to_have_text(re.compile(r"^1 min \d\d s$|^\d+ s$"))
    expect(page.locator("#pending-count")).to_have_text(str(waiting + 1), timeout=T)
    expect(page).to_have_title(re.compile(rf"^\({waiting + 1}\) Inbox · agui-inbox$"))
    expect(page.locator("#nav-inbox-count")).to_have_text(str(waiting + 1))
    # the selection and the focus did not move
    assert selected_id(page) == first
    assert page.evaluate("document.activeElement.closest('tr').dataset.approvalId") == first
    page.wait_for_function("window.__notes.some(n => n.body.includes('Pay the plumber'))", timeout=T)
    note = page.evaluate("window.__notes.find(n => n.body.includes('Pay the plumber'))")
    assert note["title"] == "New request waiting for you" and note["body"].startswith("transfer_money: ")
    finn.shoot("inbox-live-row")

    # a request for another group reaches admins, but no notification for finn
    make_requests(live_stack, [{"requester": "alice", "description": f"Support only {t}", "group": "support"}])
    # decided elsewhere: it leaves finn's "waiting" list and the counters drop
    run(live_stack, f"services.decide({new!r}, user('finn'), 'approve')")
    expect(row).to_have_count(0, timeout=T)
    expect(page.locator("#pending-count")).to_have_text(str(waiting), timeout=T)
    assert selected_id(page) == first
    assert not any("Support only" in n["body"] for n in page.evaluate("window.__notes"))


def test_screenshots_of_the_inbox(people, live_stack, artifacts_dir):
    t = tag()
    make_requests(live_stack, [
        {"requester": "alice", "description": f"Transfer 500.00 USD to 0987654321 ({t})", "risk": "high"},
        {"requester": "bob", "tool": "send_email", "agent": "ops", "group": "reviewers",
         "description": f"Send an email to bob@example.com ({t})", "timeout": 50},
        {"requester": "alice", "tool": "submit_refund", "agent": "support", "group": "finance", "risk": "medium",
         "description": f"Refund 59.00 on order 12346 ({t})", "required": 2},
    ])
    finn = people("finn")
    finn.page.goto("/inbox/")
    expect(finn.page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(finn.page.locator("#approval-rows tr", has_text=t).first).to_be_visible()
    finn.page.keyboard.press("j")
    finn.page.screenshot(path=str(artifacts_dir / "inbox-list-1280.png"), full_page=True)
    phone = people("finn", viewport={"width": 390, "height": 844})
    phone.page.goto("/inbox/")
    expect(phone.page.locator("#approval-rows tr", has_text=t).first).to_be_visible()
    phone.page.screenshot(path=str(artifacts_dir / "inbox-list-phone.png"), full_page=True)
    # nothing sticks out sideways at phone width
    assert phone.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def waiting_for(live_stack, who):
    return run(live_stack, f"from approvals.inbox import pending_mine_count\nresult = pending_mine_count(user({who!r}))")


def test_the_nav_badge_is_live_on_every_page_a_reviewer_has_open(people, live_stack):
    """Not only the inbox's own pages: on the chat, stats, audit pages finn's Inbox badge (and the
    stats page's title) follow a new request and its decision; they stayed at the count they loaded
    with, and the chat page had no badge at all."""
    t = tag()
    finn = people("finn")
    pages = {path: finn.ctx.new_page() for path in ("/chat/", "/inbox/stats/", "/audit/")}
    for path, page in pages.items():
        page.on("pageerror", lambda exc: finn.errors.append(str(exc)))
        page.goto(path)
    waiting = waiting_for(live_stack, "finn")
    [new] = make_requests(live_stack, [{"requester": "alice", "description": f"Pay the roofer {t}", "group": "finance"}])
    for page in pages.values():
        expect(page.locator("#nav-inbox-count")).to_have_text(str(waiting + 1), timeout=T)
        expect(page.locator("#nav-inbox-count")).to_be_visible()
    expect(pages["/inbox/stats/"]).to_have_title(re.compile(rf"^\({waiting + 1}\) Stats · Inbox · agui-inbox$"))
    expect(pages["/chat/"]).to_have_title("Chat · agui-inbox")  # its title is the conversation's, no count

    pages["/chat/"].reload()  # drawn with the count, not only told it later
    expect(pages["/chat/"].locator("#nav-inbox-count")).to_have_text(str(waiting + 1))

    run(live_stack, f"services.decide({new!r}, user('finn'), 'approve')")
    for page in pages.values():
        if waiting:
            expect(page.locator("#nav-inbox-count")).to_have_text(str(waiting), timeout=T)
        else:
            expect(page.locator("#nav-inbox-count")).to_be_hidden(timeout=T)
    expect(pages["/inbox/stats/"]).to_have_title(re.compile(r"^(\(\d+\) )?Stats · Inbox · agui-inbox$"))
    for page in pages.values():
        page.close()
