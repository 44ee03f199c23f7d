"""The policy pages follow a change made elsewhere: an admin's list kept the rows it loaded with, and an
edit page open over a policy another admin changed said nothing until its save was refused. Now the
list draws its rows again, and the edit page says who changed the policy, the draft left as typed."""

import inbox_e2e
from inbox_e2e import T, run
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

TOOL = "list_files"  # a tool no other browser test calls or saves a policy of

SAVE_AS_ADA = ("from django.contrib.auth.models import User\n"
               "ada = User.objects.filter(username='ada').first() or "
               "User.objects.create_superuser('ada', 'ada@example.com', 'pw')\n"
               f"services.save_policy({TOOL!r}, {{'mode': 'deny', 'approver_kind': 'requester'}}, ada)")


def test_policy_pages_follow_another_admins_change(people, live_stack):
    run(live_stack, f"services.delete_policy({TOOL!r}, user('admin'))")
    admin = people("admin")
    edit, listing = admin.page, admin.ctx.new_page()  # a second tab of the same admin
    listing.on("pageerror", lambda exc: admin.errors.append(f"admin: {exc}"))
    edit.goto(f"/policies/{TOOL}/")
    listing.goto("/policies/")
    for page in (edit, listing):
        expect(page.locator("body")).to_have_attribute("data-notice-socket", "open", timeout=T)
    row = listing.locator(f'#policies-table tr[data-tool="{TOOL}"]')
    expect(row).to_contain_text("code default")
    edit.get_by_label("Risk").select_option("critical")
    try:
        run(live_stack, SAVE_AS_ADA)
        expect(edit.locator("#policy-changed-live")).to_be_visible(timeout=T)
        expect(edit.locator("#policy-changed-live")).to_contain_text("ada just changed this policy.")
        expect(edit.get_by_label("Risk")).to_have_value("critical")  # the draft as typed
        expect(row.locator("td").nth(1)).to_have_text("policy", timeout=T)
        expect(row).to_contain_text("by ada")
        edit.locator("#save-policy").click()  # the save first shows where the draft and ada's change differ
        expect(edit.locator("#policy-stale")).to_contain_text("ada changed this policy")
        expect(edit.locator("#policy-changed-live")).to_be_hidden()
    finally:
        run(live_stack, f"services.delete_policy({TOOL!r}, user('admin'))")
    expect(row.locator("td").nth(1)).to_have_text("code default", timeout=T)
