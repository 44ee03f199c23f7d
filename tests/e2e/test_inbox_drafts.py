"""What a reviewer typed on a request's page, through Back, a reload and a session that ended:
what is approved is what the page shows, and nothing typed is silently lost."""

import re

import inbox_e2e
from inbox_e2e import T, lapse, make_requests, run, sign_in_here, statuses, tag, wait_status
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
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 250")
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


def _fay(live_stack) -> None:
    run(live_stack, "from django.contrib.auth.models import User\n"
                    "from tests.helpers import finance_member\n"
                    "if not User.objects.filter(username='fay').exists():\n"
                    "    finance_member('fay', 'fay@example.com')")


def _decide_as_fay(live_stack, rid, decision, feedback=""):
    run(live_stack, "from django.contrib.auth.models import User\n"
                    f"services.decide({rid!r}, User.objects.get(username='fay'), {decision!r}, feedback={feedback!r})")


def test_another_approval_of_a_quorum_leaves_the_reviewers_draft_alone(people, live_stack):
    """fay's approval (1 of 2) swapped finn's whole form for the server's: his edit and feedback went,
    the editor became a bare JSON box with none of the page's checks, and the focus fell to the page."""
    _fay(live_stack)
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Two ({t})", "required": 2}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    page.get_by_label("amount").fill("300")
    feedback = page.locator("#feedback")
    feedback.fill("Half a thought")
    feedback.focus()
    _decide_as_fay(live_stack, rid, "approve")
    expect(page.locator("#quorum-panel")).to_contain_text("fay")
    expect(page.get_by_label("amount")).to_have_value("300")
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 300")
    expect(feedback).to_have_value("Half a thought")
    expect(feedback).to_be_focused()
    expect(page.locator("#inbox-live")).to_have_text("This request changed.")


def test_decided_elsewhere_is_announced_and_the_focus_kept_on_the_page(people, live_stack):
    _fay(live_stack)
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Elsewhere ({t})"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    page.locator("#feedback").focus()
    _decide_as_fay(live_stack, rid, "reject", feedback="Not today")
    expect(page.locator("#outcome")).to_contain_text("by fay")
    expect(page.locator("#inbox-live")).to_have_text("This request is now Rejected.")
    expect(page.locator("#outcome-heading")).to_be_focused()


def test_a_reload_keeps_the_reviewers_feedback_and_edits(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Reload ({t})"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    page.get_by_label("amount").fill("250")
    page.locator("#feedback").fill("Split it in two")
    page.reload()
    expect(page.get_by_label("amount")).to_have_value("250")
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 250")
    expect(page.locator("#feedback")).to_have_value("Split it in two")
    expect(page.locator("#draft-note")).to_have_text("What you typed here before was put back.")


def test_a_lapsed_session_loses_nothing_the_reviewer_typed(people, live_stack):
    """Reject after the session ended: the login page, then the request page again, empty."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Lapsed ({t})"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    page.get_by_label("amount").fill("250")
    page.locator("#feedback").fill("Ask alice which account first")
    lapse(finn)
    page.locator("#reject").click()
    page.wait_for_url(re.compile(r"/accounts/login/"))
    sign_in_here(page, "finn")
    page.wait_for_url(re.compile(rf"/inbox/{rid}/$"))
    expect(page.locator("#feedback")).to_have_value("Ask alice which account first")
    expect(page.get_by_label("amount")).to_have_value("250")
    page.locator("#reject").click()
    page.wait_for_url(re.compile(r"held="), timeout=T)
    assert wait_status(live_stack, rid, "rejected") == "rejected"
    assert statuses(live_stack, [rid])[rid][1] == "Ask alice which account first"


def test_a_draft_is_its_authors_only(people, live_stack):
    """Someone else signing in on the same tab after a session lapsed gets an empty form."""
    _fay(live_stack)
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Shared tab ({t})"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    page.locator("#feedback").fill("finn's words")
    lapse(finn)
    page.reload()
    page.wait_for_url(re.compile(r"/accounts/login/"))
    sign_in_here(page, "fay", password="pw")  # tests.helpers.finance_member's
    page.wait_for_url(re.compile(rf"/inbox/{rid}/$"))
    expect(page.locator("#reject")).to_be_visible()
    expect(page.locator("#feedback")).to_have_value("")
    expect(page.locator("#draft-note")).to_have_count(0)
