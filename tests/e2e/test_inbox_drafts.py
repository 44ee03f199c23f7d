"""What a reviewer typed on a request's page, through Back, a reload and a session that ended:
what is approved is what the page shows, and nothing typed is silently lost."""

import re

import inbox_e2e
from inbox_e2e import T, make_requests, statuses, tag, wait_status
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def _approve(page):
    page.locator("#approve").click()
    expect(page.locator("#decide-dialog")).to_be_visible()  # high risk: asked first
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_url(re.compile(r"held="), timeout=T)


def test_after_back_the_approval_is_of_the_arguments_shown(people, live_stack):
    """Chromium restores a textarea's text on Back after the page script has built the editor: the
    hidden copy the form sends said 250 while the editor and the dialog said 500, no changes."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Back ({t})", "risk": "high"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    amount = page.get_by_label("amount")
    expect(amount).to_have_value("500")
    amount.fill("250")
    expect(page.locator("#diff-preview")).to_contain_text("amount: 500 → 250")
    page.goto("/inbox/")
    page.go_back()
    expect(page.locator("#approval-detail")).to_be_visible()
    shown = page.get_by_label("amount").input_value()
    changes = page.locator("#diff-preview").inner_text()
    _approve(page)
    wait_status(live_stack, rid, "approved" if shown == "500" else "modified")  # sent after the undo window
    status, _feedback, final = statuses(live_stack, [rid])[rid]
    approved = (final or {"amount": 500})["amount"]
    assert approved == float(shown), f"the page showed {shown} ({changes!r}); {approved} was approved ({status})"
