"""A policy changed while a request waits routes it to the group it now names, live: the former
group's open request page stops offering a decision and says why (its Approve, clicked, met a 404
page), the new group's inbox lists it, and the requester's chat says who decides now (it said the
former group until a reload), without a reload."""

import inbox_e2e
from chat_helpers import new_chat, send
from inbox_e2e import T, make_requests, run, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

ROUTE_TO_SUPPORT = ("from django.contrib.auth.models import Group\n"
                    "services.save_policy('transfer_money', {'mode': 'always', 'approver_kind': 'group', "
                    "'approver_group': Group.objects.get(name='support')}, user('admin'))")


def test_a_request_routed_to_another_group_leaves_the_former_group_s_open_page(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Pay the painter {t}",
                                        "group": "finance"}])
    finn, rita = people("finn"), people("rita")
    finn.page.goto(f"/inbox/{rid}/")
    rita.page.goto(f"/inbox/?q={t}")
    for page in (finn.page, rita.page):
        expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(finn.page.locator("#approve")).to_be_visible()
    expect(rita.page.locator("#approval-rows tr[data-approval-id]")).to_have_count(0)
    try:
        run(live_stack, ROUTE_TO_SUPPORT)
        banner = finn.page.locator("#gone-banner")
        expect(banner).to_have_text("A policy change gave this request to another group: you no longer decide it.",
                                    timeout=T)
        expect(finn.page.locator("#approve")).to_have_count(0)
        expect(finn.page.locator("#reject")).to_have_count(0)
        finn.page.keyboard.press("a")  # the key offers nothing either
        expect(finn.page.locator("dialog[open]")).to_have_count(0)
        expect(rita.page.locator(f'#approval-rows tr[data-approval-id="{rid}"]')).to_be_visible(timeout=T)
        finn.shoot("routed-away")
    finally:
        run(live_stack, "services.delete_policy('transfer_money', user('admin'))")


def test_the_requesters_chat_says_who_decides_after_a_policy_change(people, live_stack):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    send(page, "Transfer $500 from account 1234567890 to account 0987654321")
    approval = page.locator(".tool-card", has_text="transfer_money").locator(".approval-card")
    expect(approval).to_contain_text("Awaiting review by finance", timeout=T)
    try:
        run(live_stack, ROUTE_TO_SUPPORT)
        expect(approval).to_contain_text("Awaiting review by support", timeout=T)
        expect(page.locator("#composer")).to_have_attribute("placeholder", "You can write again after a decision by support.")
        alice.shoot("routed-chat")
    finally:
        run(live_stack, "services.delete_policy('transfer_money', user('admin'))")
