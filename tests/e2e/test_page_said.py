"""What the server says with a page it sends whole. A form sent back with its errors began with focus
on <body> and an error summary that screen readers do not read when it is there from the start; a
redirect's flash message ("Policy for read_file saved.", "Undone: nothing was sent.") was not read
either. The error summary now takes focus, and the flash is said in a polite region present from the
page's start (static/js/page-said.js)."""

import inbox_e2e
from inbox_e2e import run
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

TOOL = "rename_file"  # a tool no other browser test saves a policy of


def _drop_policy(live_stack):
    run(live_stack, f"from approvals.models import ToolPolicy\nToolPolicy.objects.filter(tool_name={TOOL!r}).delete()")


def test_a_form_sent_back_with_errors_focuses_them_and_a_flash_is_said(people, live_stack):
    _drop_policy(live_stack)
    page = people("admin").page
    page.goto(f"/policies/{TOOL}/")
    page.get_by_label("Remind at (fraction)").fill("5")
    page.locator("#save-policy").click()
    errors = page.locator("#policy-errors")
    expect(errors).to_be_visible()
    expect(errors).to_be_focused()  # read where the admin now is; Tab goes on to the fields
    expect(page.locator("#page-said")).to_have_text("")  # nothing to say but the errors

    page.get_by_label("Remind at (fraction)").fill("0.5")
    page.locator("#save-policy").click()
    expect(page.locator(".flash-success")).to_contain_text("saved")
    expect(page.locator("#page-said")).to_have_text(f"Policy for {TOOL} saved.")
    assert page.evaluate("document.activeElement.id") != "policy-errors"
    _drop_policy(live_stack)

