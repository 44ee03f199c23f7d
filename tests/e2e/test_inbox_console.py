"""The policy console: build a rule without writing JSON, replay recorded calls against the draft
(nothing saved), then save a policy and see its change history; reviewers cannot open it."""

import json
import re

import inbox_e2e
import pytest
from inbox_e2e import T, run
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def transfer(amount, currency="USD"):
    return {"from_account": "1234567890", "to_account": "0987654321", "amount": amount, "currency": currency}


def test_policy_simulator(people, live_stack, artifacts_dir):
    # three recorded calls, the newest of this tool: what happened then was "a person decides" (always)
    run(live_stack, f"""
for amount, currency in ((4321.5, "USD"), (12.34, "USD"), (77.7, "EUR")):
    args = {{**{json.dumps(transfer(0))}, "amount": amount, "currency": currency}}
    record_call("alice", "transfer_money", args, status="awaiting_approval", approval_id="sim")
""")
    admin = people("admin")
    page = admin.page
    page.goto("/policies/")
    page.get_by_role("link", name="transfer_money").click()
    page.wait_for_url(re.compile(r"/policies/transfer_money/$"))
    # what the policy's history holds now (other tests may have saved and dropped this policy)
    saved = page.locator("#history .history-list > li").count()
    page.get_by_label("Mode").select_option("conditional")

    # the rule builder: large or foreign transfers need a person; the JSON follows along
    builder = page.locator("#rule-builder")
    expect(builder).to_be_visible()
    builder.get_by_role("button", name="Add rule").click()
    card = builder.locator(".rule-card").last
    card.get_by_label("Name").fill("large or foreign")
    card.get_by_label("When").select_option("any")
    card.get_by_label("Path").fill("args.amount")
    card.get_by_label("Operator").select_option("gt")
    card.get_by_label("Value").fill("1000")
    card.get_by_role("button", name="Add condition").click()
    card.get_by_label("Path").nth(1).fill("args.currency")
    card.get_by_label("Operator").nth(1).select_option("ne")
    card.get_by_label("Value").nth(1).fill("USD")
    card.get_by_label("Then").select_option("gate")
    rules = json.loads(page.locator("#p-conditions").input_value())
    assert rules[-1] == {"name": "large or foreign", "when": {"any": [
        {"path": "args.amount", "op": "gt", "value": 1000},
        {"path": "args.currency", "op": "ne", "value": "USD"}]}, "action": "gate"}

    page.get_by_label("Calls to replay").select_option("10")
    page.get_by_role("button", name="Simulate the draft").click()
    table = page.locator("#sim-table")
    expect(table).to_be_visible(timeout=T)

    def outcome(amount):
        row = table.locator("tbody tr", has_text=f'"amount": {amount}')
        return row.first.get_attribute("data-outcome")

    assert outcome(4321.5) == "gated"
    assert outcome(12.34) == "allowed"
    assert outcome(77.7) == "gated"
    expect(page.locator("#sim-summary")).to_contain_text("would change")
    # the draft is still in the form, nothing was saved
    expect(page.get_by_label("Mode")).to_have_value("conditional")
    assert "large or foreign" in page.locator("#p-conditions").input_value()
    expect(page.locator("#history .history-list > li")).to_have_count(saved)  # simulating saved nothing
    page.screenshot(path=str(artifacts_dir / "inbox-console.png"), full_page=True)


def test_save_a_policy_and_see_its_history(people, live_stack):
    # rename_file: no browser test depends on its policy; reverted at the end all the same
    admin = people("admin")
    page = admin.page
    page.goto("/policies/rename_file/")
    try:
        page.get_by_label("Approvals needed").fill("1")
        page.get_by_label("Risk").select_option("high")
        page.get_by_label("Timeout (seconds)").fill("0")
        page.get_by_role("button", name="Save policy").click()
        expect(page.locator("#p-timeout-error")).to_contain_text("at least 1")
        page.get_by_label("Timeout (seconds)").fill("600")
        page.get_by_role("button", name="Save policy").click()
        expect(page.locator(".flash-messages")).to_contain_text("Policy for rename_file saved.")
        history = page.locator("#history")
        expect(history).to_contain_text("Policy Created")
        # in the page's words: the field as the form names it, the value as the form offers it
        expect(history.locator("tr", has_text="time to decide (s)")).to_contain_text("600")
        expect(history.locator("tr", has_text="risk")).to_contain_text("High")
        page.goto("/policies/")
        expect(page.locator('tr[data-tool="rename_file"]')).to_contain_text("policy")
    finally:
        page.goto("/policies/rename_file/")
        page.once("dialog", lambda d: d.accept())
        if page.locator("#revert").count():
            page.locator("#revert").click()
            expect(page.locator(".flash-messages")).to_contain_text("back on its code defaults")
    finn = people("finn")
    assert finn.page.goto("/policies/").status == 403


SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.mark.parametrize("size", list(SIZES))
def test_saving_a_draft_that_loosens_review_asks_first(people, live_stack, artifacts_dir, size):
    """submit_replacement: no other browser test depends on its policy; reverted at the end."""
    run(live_stack, """
for n in range(3):
    record_call("alice", "submit_replacement", {"order_id": "1234%d" % n, "reason": "broken"}, agent="support",
                status="succeeded", approval_id="reviewed-%d" % n)
""")
    admin = people("admin", viewport=SIZES[size])
    page = admin.page
    page.goto("/policies/submit_replacement/")
    try:
        page.get_by_label("Mode").select_option("never")
        # nobody decides a call that runs at once: the approver and deadline fields go away
        expect(page.locator("#p-nobody")).to_have_text("Who decides: nobody (every call runs at once)")
        expect(page.get_by_label("Who decides")).to_be_hidden()
        expect(page.get_by_label("Timeout (seconds)")).to_be_hidden()
        page.get_by_role("button", name="Save policy").click()
        warning = page.locator("#loosening-warning")
        expect(warning).to_contain_text("Not saved yet: this draft loosens review.")
        # every recorded call was reviewed (another run of this test may have recorded some too)
        expect(warning).to_contain_text(re.compile(
            r"Calls a person reviewed that would run without review under this draft: (\d+) of the last \1\."))
        expect(page.locator("#sim-loosened")).to_have_text(re.compile(r"^([3-9]|\d\d+)less review$"))
        expect(page.locator("#sim-tightened")).to_have_text("0more review")
        expect(page.locator(".flash-messages")).to_have_count(0)
        expect(page.get_by_label("Mode")).to_have_value("never")  # the draft is kept
        page.screenshot(path=str(artifacts_dir / f"console-loosening-{size}.png"), full_page=True)
        page.screenshot(path=str(artifacts_dir / f"console-loosening-{size}-first-screen.png"))
        warning.get_by_role("button", name="Save anyway").click()
        expect(page.locator(".flash-messages")).to_contain_text("Policy for submit_replacement saved.")
        page.goto("/policies/")
        row = page.locator('tr[data-tool="submit_replacement"]')
        expect(row).to_contain_text("never asks")
        expect(row.locator('td[data-label="Who decides"]')).to_have_text("nobody")
        expect(row).not_to_contain_text("the requester")
        page.screenshot(path=str(artifacts_dir / f"console-list-{size}.png"), full_page=True)
    finally:
        page.goto("/policies/submit_replacement/")
        page.once("dialog", lambda d: d.accept())
        if page.locator("#revert").count():
            page.locator("#revert").click()
            expect(page.locator(".flash-messages")).to_contain_text("back on its code defaults")


def test_the_rule_builder_names_operators_in_words(people):
    page = people("admin").page
    page.goto("/policies/transfer_money/")
    page.get_by_label("Mode").select_option("conditional")
    page.locator("#rule-builder").get_by_role("button", name="Add rule").click()
    card = page.locator("#rule-builder .rule-card").last
    options = card.get_by_label("Operator").locator("option").all_inner_texts()
    assert "is more than" in options and not [o for o in options if "(" in o and ">" in o], options
    assert card.get_by_label("Then").locator("option").all_inner_texts() == ["ask a person", "block the call",
                                                                          "let it run"]


def test_after_back_the_draft_simulated_is_the_rules_shown(people):
    """Chromium restores the rules' textarea (what the form sends) on Back after the builder was built
    from the server's rules: the page showed one set of rules and sent another. Simulated, not saved."""
    page = people("admin").page
    page.goto("/policies/transfer_money/")
    page.get_by_label("Mode").select_option("conditional")
    builder = page.locator("#rule-builder")
    names = builder.locator(".rule-card .field-name input")
    before = names.count()
    builder.get_by_role("button", name="Add rule").click()
    card = builder.locator(".rule-card").last
    card.get_by_label("Name").fill("back and forth")
    card.get_by_label("Path").fill("args.amount")
    card.get_by_label("Operator").select_option("gt")
    card.get_by_label("Value").fill("99999")
    expect(names).to_have_count(before + 1)
    page.goto("/policies/")
    page.go_back()
    expect(builder.locator("#add-rule")).to_be_visible()
    shown = names.evaluate_all("(inputs) => inputs.map((i) => i.value)")
    page.get_by_role("button", name="Simulate the draft").click()
    # simulated, or refused (a conditional mode with the rules shown, none): either way the page now holds what was sent
    expect(page.locator("#sim-summary, #policy-errors").first).to_be_visible(timeout=T)
    sent = names.evaluate_all("(inputs) => inputs.map((i) => i.value)")
    assert sent == shown, f"the builder showed the rules {shown}; the draft sent had {sent}"


def test_after_back_who_decides_follows_the_mode_shown(people):
    """On Back, Chromium restores the Mode chosen after the page script hid or showed the approver
    fields for the server's mode: "Block" was shown with its reviewers, or a reviewed mode with "nobody"."""
    page = people("admin").page
    page.goto("/policies/transfer_money/")
    mode = page.get_by_label("Mode")
    mode.select_option("deny")
    expect(page.locator("#p-nobody")).to_be_visible()
    page.goto("/policies/")
    page.go_back()
    expect(page.locator("#add-rule")).to_be_visible()
    shown = mode.input_value()
    if shown in ("deny", "never"):
        expect(page.locator("#p-nobody")).to_be_visible()
        expect(page.get_by_label("Who decides", exact=True)).to_be_hidden()
    else:
        expect(page.locator("#p-nobody")).to_be_hidden()
        expect(page.get_by_label("Who decides", exact=True)).to_be_visible()
