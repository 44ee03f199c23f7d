"""Respond and allowed decisions in the browser, at a desktop and a phone size: the chat's card offers
only what the tool's policy allows and sends guidance instead of a decision; the inbox's decision
form shows only the allowed buttons. Screenshots go to var/artifacts (and /tmp/shots-h5)."""

import shutil
from pathlib import Path

import pytest
from chat_helpers import Session, T, close_sessions, manage_shell, new_chat, send
from playwright.sync_api import expect

SIZES = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}
SHOTS = Path("/tmp/shots-h5")


def set_policy(live_stack, tool, fields):
    manage_shell(live_stack, (
        "from django.contrib.auth.models import Group, User; from approvals import services; "
        f"f = {fields!r}; f['approver_group'] = Group.objects.get(name=f['approver_group']) "
        "if f.get('approver_group') else None; "
        f"services.save_policy({tool!r}, f, User.objects.get(username='admin')); print('ok')"))


def drop_policy(live_stack, tool):
    manage_shell(live_stack, ("from django.contrib.auth.models import User; from approvals import services; "
                              f"services.delete_policy({tool!r}, User.objects.get(username='admin')); print('ok')"))


@pytest.fixture(params=list(SIZES))
def session(request, browser, live_stack, login, artifacts_dir):
    made = []

    def make(who):
        s = Session(browser, live_stack, login, who, artifacts_dir, prefix=f"respond-{request.param}",
                    **SIZES[request.param])
        made.append(s)
        return s

    yield make
    close_sessions(request, made)


def keep(path):
    SHOTS.mkdir(exist_ok=True)
    shutil.copy(path, SHOTS / path.name)


def test_the_chat_card_offers_only_the_allowed_answers_and_sends_guidance(session, live_stack):
    set_policy(live_stack, "cancel_subscription", {"mode": "always", "approver_kind": "requester",
                                                   "allowed_decisions": ["reject", "respond"]})
    try:
        alice = session("alice")
        page = alice.page
        new_chat(page)
        send(page, "Cancel subscription sub_123")
        card = page.locator(".tool-card", has_text="cancel_subscription").last
        actions = card.locator(".approval-actions")
        expect(actions).to_be_visible(timeout=T)
        expect(actions.get_by_role("button", name="Approve")).to_have_count(0)
        expect(actions.get_by_role("button", name="Edit")).to_have_count(0)
        expect(actions.locator(".allow-always")).to_have_count(0)
        actions.get_by_role("button", name="Answer instead").click()
        actions.get_by_role("button", name="Send guidance").click()
        expect(actions.locator(".approval-error")).to_contain_text("Write your guidance first")
        actions.locator("textarea[id^=guidance-]").fill("Pause it for a month instead")
        keep(alice.shoot("guidance-typed"))
        actions.get_by_role("button", name="Send guidance").click()
        expect(card.locator(".status-badge")).to_have_text("Answered with guidance", timeout=T)
        expect(card.locator(".tool-status")).to_have_text("Answered", timeout=T)
        expect(card.locator(".tool-outcome")).to_contain_text("answered with guidance", timeout=T)
        expect(card).to_contain_text("Pause it for a month instead")
        assert "did not run it and says" not in page.locator("body").inner_text()  # the model's words
        keep(alice.shoot("answered"))
    finally:
        drop_policy(live_stack, "cancel_subscription")


def test_the_inbox_form_shows_only_the_allowed_buttons(session, live_stack):
    set_policy(live_stack, "transfer_money", {"mode": "always", "approver_kind": "group", "approver_group": "finance",
                                              "allowed_decisions": ["reject", "respond"]})
    try:
        alice = session("alice")
        new_chat(alice.page)
        send(alice.page, "Transfer $300 from account 1234567890 to account 0987654321")
        approval = alice.page.locator(".tool-card", has_text="transfer_money").last.locator(".approval-card")
        expect(approval).to_be_visible(timeout=T)
        approval_id = approval.get_attribute("data-approval-id")
        finn = session("finn")
        finn.page.goto(f"/inbox/{approval_id}/")
        form = finn.page.locator("#decide-form")
        expect(form.locator("#respond")).to_be_visible()
        expect(form.locator("#reject")).to_be_visible()
        expect(form.locator("#approve")).to_have_count(0)
        expect(finn.page.locator("#no-edits")).to_contain_text("does not allow edits")
        finn.page.fill("#feedback", "Wait for the invoice, then ask again")
        keep(finn.shoot("inbox-respond-only"))
        form.locator("#respond").click()
        expect(alice.page.locator(".tool-card", has_text="transfer_money").last.locator(".tool-status")).to_have_text(
            "Answered", timeout=T)
        keep(alice.shoot("chat-after-inbox-guidance"))
    finally:
        drop_policy(live_stack, "transfer_money")


def test_the_policy_console_chooses_what_reviewers_may_answer(session, live_stack):
    admin = session("admin")
    admin.page.goto("/policies/transfer_money/")
    box = admin.page.locator("#p-decisions")
    expect(box).to_be_visible()
    for value in ("approve", "edit", "reject"):
        expect(box.locator(f'input[value="{value}"]')).to_be_checked()
    expect(box.locator('input[value="respond"]')).not_to_be_checked()
    width = admin.page.viewport_size["width"]
    assert admin.page.evaluate("document.documentElement.scrollWidth") <= width
    box.scroll_into_view_if_needed()
    keep(admin.shoot("policy-decisions"))


def test_the_rule_builder_keeps_and_edits_a_route(session, live_stack):
    admin = session("admin")
    page = admin.page
    page.goto("/policies/transfer_money/")
    page.locator("select#p-mode").select_option("conditional")
    page.get_by_role("button", name="Add rule").click()
    card = page.locator(".rule-card").last
    card.locator(".cond-row input[list]").fill("args.amount")
    card.locator(".cond-row select").select_option("gt")
    card.locator(".cond-row input").nth(2).fill("10000")
    route = card.locator(".rule-route")
    route.get_by_label("Decided by").fill("finance")
    route.get_by_label("How many approve").fill("1")
    route.get_by_label("Treat as").select_option("critical")
    route.get_by_label("Time to decide").fill("15 min")
    written = page.locator("#p-conditions").input_value()
    assert '"route"' in written and '"deadline": "15 min"' in written and '"risk": "critical"' in written, written
    keep(admin.shoot("rule-route"))
    card.get_by_label("Then").select_option("deny")  # only a gate rule routes
    assert '"route"' not in page.locator("#p-conditions").input_value()
