"""A request of a requester whose account is switched off can be rejected, never approved: the
request page said so only as the error of a click on Approve, and the inbox list's `a` opened an
approval dialog for it. The page, the reading pane and the key say so first, in words."""

import inbox_e2e
from inbox_e2e import T, make_requests, run, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def test_a_switched_off_requesters_request_offers_reject_only(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "bob", "description": f"Pay the tiler {t}", "group": "finance"}])
    run(live_stack, "user('bob').__class__.objects.filter(username='bob').update(is_active=False)")
    try:
        finn = people("finn")
        page = finn.page
        page.goto(f"/inbox/?q={t}")
        expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        row = page.locator(f'#approval-rows tr[data-approval-id="{rid}"]')
        expect(row.locator(".col-requester")).to_contain_text("account switched off")
        page.keyboard.press("j")
        expect(page.locator("#preview-requester-off")).to_have_text("bob's account is switched off: reject only.")
        expect(page.locator("#preview-approve")).to_have_count(0)
        page.keyboard.press("a")
        expect(page.locator("#decide-result")).to_have_text("bob's account is switched off: reject only.")
        expect(page.locator("dialog[open]")).to_have_count(0)
        page.goto(f"/inbox/{rid}/")
        expect(page.locator("#requester-off")).to_have_text(
            "bob's account is switched off, so this call cannot run for them: you can only reject it.")
        expect(page.locator("#approve")).to_have_count(0)
        expect(page.locator("#reject")).to_be_visible()
        finn.shoot("requester-off")
    finally:
        run(live_stack, "user('bob').__class__.objects.filter(username='bob').update(is_active=True)")
