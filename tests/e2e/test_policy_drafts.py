"""What an admin typed in the policy console, through a session that ended: the sign-in it asks
for leads back to the policy page with the draft put back, for that admin only; a save forgets it."""

import re

import inbox_e2e
from inbox_e2e import lapse, run, sign_in_here
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

TOOL = "read_file"  # a tool no other browser test reads or saves a policy of


def _drop_policy(live_stack):
    run(live_stack, f"from approvals.models import ToolPolicy\nToolPolicy.objects.filter(tool_name={TOOL!r}).delete()")


def test_a_lapsed_session_loses_nothing_the_admin_typed(people, live_stack):
    _drop_policy(live_stack)
    admin = people("admin")
    page = admin.page
    page.goto(f"/policies/{TOOL}/")
    page.get_by_label("Mode").select_option("always")
    page.get_by_label("Timeout (seconds)").fill("4321")
    page.get_by_label("Remind at (fraction)").fill("0.4")
    lapse(admin)
    page.locator("#save-policy").click()
    page.wait_for_url(re.compile(r"/accounts/login/"))
    sign_in_here(page, "admin")
    page.wait_for_url(re.compile(rf"/policies/{TOOL}/$"))
    expect(page.get_by_label("Timeout (seconds)")).to_have_value("4321")
    expect(page.get_by_label("Remind at (fraction)")).to_have_value("0.4")
    expect(page.get_by_label("Mode")).to_have_value("always")
    expect(page.locator("#draft-note")).to_have_text("What you typed here before was put back.")

    page.locator("#save-policy").click()  # now saved; the page after it has nothing to put back
    expect(page.locator(".flash-success")).to_contain_text("saved")
    saved = run(live_stack, f"from approvals.models import ToolPolicy\n"
                            f"p = ToolPolicy.objects.get(tool_name={TOOL!r})\nresult = [p.mode, p.timeout_seconds]")
    assert saved == ["always", 4321]
    page.reload()
    expect(page.locator("#draft-note")).to_have_count(0)
    _drop_policy(live_stack)


def test_a_policy_draft_is_its_authors_only(people, live_stack):
    """Another admin signing in on the same tab after the session lapsed gets the policy as saved."""
    _drop_policy(live_stack)
    run(live_stack, "from django.contrib.auth.models import User\n"
                    "if not User.objects.filter(username='ada').exists():\n"
                    "    User.objects.create_superuser('ada', 'ada@example.com', 'pw')")
    admin = people("admin")
    page = admin.page
    page.goto(f"/policies/{TOOL}/")
    drawn = page.get_by_label("Risk").input_value()
    page.get_by_label("Risk").select_option("critical")
    lapse(admin)
    page.reload()
    page.wait_for_url(re.compile(r"/accounts/login/"))
    sign_in_here(page, "ada", password="pw")
    page.wait_for_url(re.compile(rf"/policies/{TOOL}/$"))
    expect(page.get_by_label("Risk")).to_have_value(drawn)
    expect(page.locator("#draft-note")).to_have_count(0)
