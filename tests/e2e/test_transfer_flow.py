"""The banking demo end to end in two browsers: alice asks for a transfer, finn (finance) edits the
amount in the live inbox and approves, alice watches the run resume with the edited amount.

Runs against the whole product (Daphne, a Celery worker, Redis, the offline scripted model) from
the `live_stack` fixture; screenshots of both pages at every step land in var/artifacts/.
"""

import re

from playwright.sync_api import expect

T = 15_000  # ms: the longest any single expectation may wait


def test_transfer_edited_and_approved_live(browser, live_stack, login, artifacts_dir):
    errors = []  # uncaught exceptions in either page fail the test at the end
    shots = []

    def new_page(who):
        ctx = browser.new_context(base_url=live_stack.url, viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        page.set_default_timeout(T)
        page.on("pageerror", lambda exc: errors.append(f"{who}: {exc}"))
        return ctx, page

    ctx_a, alice = new_page("alice")
    ctx_b, finn = new_page("finn")

    def shoot(step):
        for who, page in (("alice", alice), ("finn", finn)):
            if page.url.startswith("http"):
                path = artifacts_dir / f"transfer-{len(shots) // 2 + 1:02d}-{step}-{who}.png"
                page.screenshot(path=str(path), full_page=True)
                shots.append(path)

    try:
        # finn opens the inbox first: the new request must arrive without a reload.
        login(finn, "finn")
        finn.goto("/inbox/")
        expect(finn.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        rows_before = set(finn.locator("#approval-rows tr[data-approval-id]").evaluate_all(
            "rows => rows.map(r => r.dataset.approvalId)"))

        # alice starts a chat with the banking agent.
        login(alice, "alice")
        alice.goto("/chat/")
        alice.get_by_label("Agent", exact=True).select_option("banking")
        expect(alice.locator('.agent-info[data-agent="banking"]')).to_contain_text("transfer_money")
        alice.get_by_role("button", name="New chat").click()
        alice.wait_for_url(re.compile(r"/chat/[^/]+/$"), timeout=T)
        expect(alice.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        expect(alice.locator("#chat-heading")).to_contain_text("Banking")
        expect(alice.locator(".chat-header")).to_contain_text("Offline demo model")
        shoot("chat-opened")

        alice.locator("#composer").fill("Transfer $500 from account 1234567890 to account 0987654321")
        alice.locator("#composer").press("Enter")
        expect(alice.locator("#composer")).to_have_value("")
        expect(alice.locator(".msg-user").last).to_contain_text("Transfer $500 from account 1234567890")

        # The streamed reply, the tool card and its pending approval.
        reply = alice.locator(".msg-assistant .msg-body").first
        expect(reply).to_contain_text("I'll transfer 500.00 USD", timeout=T)
        card = alice.locator(".tool-card", has_text="transfer_money")
        expect(card).to_have_count(1, timeout=T)
        expect(card.locator(".approval-card")).to_contain_text("Awaiting review by finance", timeout=T)
        expect(card.locator(".approval-card .status-badge")).to_have_text("Pending")
        expect(card.locator(".tool-args")).to_contain_text('"amount": 500')
        expect(alice.locator("#run-status")).to_contain_text("Waiting for finance to decide on")
        # alice is not the approver: no decision buttons on her side.
        expect(card.locator(".approval-actions")).to_have_count(0)
        shoot("awaiting-review")

        # finn's inbox shows the new row live, with the right count in the title.
        new_row = finn.locator("#approval-rows tr[data-approval-id]", has_text="transfer_money").filter(
            has_text="1234567890").first
        expect(new_row).to_be_visible(timeout=T)
        approval_id = new_row.get_attribute("data-approval-id")
        assert approval_id not in rows_before, "the row was there before alice asked"
        expect(new_row).to_contain_text("alice")
        expect(new_row.locator(".risk")).to_have_text("high")
        expect(finn).to_have_title(re.compile(r"^\(\d+\) Inbox · agui-inbox$"))
        expect(finn.locator("#nav-inbox-count")).to_have_text(re.compile(r"^[1-9]\d*$"))
        shoot("inbox-live-row")

        # finn opens it, lowers the amount to 450 and approves.
        new_row.locator("a.row-link").click()  # the row also links its thread
        finn.wait_for_url(re.compile(rf"/inbox/{re.escape(approval_id)}/$"), timeout=T)
        expect(finn.locator(".detail-title")).to_contain_text("Transfer 500.00 USD from 1234567890 to 0987654321")
        expect(finn.locator(".excerpt")).to_contain_text("Transfer $500 from account 1234567890")
        amount = finn.locator("#arg__amount")
        expect(amount).to_have_value(re.compile(r"^500(\.0+)?$"))
        amount.fill("450")
        expect(finn.locator("#diff-preview")).to_contain_text("Amount: 500 → 450")
        shoot("detail-edited")
        finn.locator("#approve").click()
        finn.locator("#decide-dialog-confirm").click()  # edits (and high risk): the page asks first
        # on to the next request (or inbox zero) with an Undo; the server sends it when the window closes
        finn.wait_for_url(re.compile(r"held="), timeout=T)
        expect(finn.locator("#undo-toast")).to_contain_text("Approved with edits: Amount: 500 → 450")  # what ran
        shoot("approved")

        # alice's page: the approval shows the edit, the tool ran with 450, the agent answers.
        approval = card.locator(".approval-card")
        expect(approval.locator(".status-badge")).to_have_text("Approved with edits", timeout=T)
        expect(approval.locator(".approval-diff")).to_contain_text("Amount: 500.00 USD → 450.00 USD")
        expect(approval).to_contain_text("finn")
        expect(card.locator(".tool-result")).to_contain_text("450.00", timeout=T)
        final = alice.locator(".msg-assistant .msg-body", has_text="Transferred 450.00 USD")
        expect(final.last).to_be_visible(timeout=T)
        expect(alice.locator("#run-status")).to_be_hidden(timeout=T)
        expect(alice.locator("#composer")).to_be_enabled()
        shoot("resumed")

        # A reload rebuilds the same conversation from the snapshots, without duplicates.
        alice.reload()
        expect(alice.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        expect(alice.locator(".tool-card", has_text="transfer_money")).to_have_count(1, timeout=T)
        expect(alice.locator(".msg-user")).to_have_count(1)
        expect(alice.locator(".approval-card .approval-diff")).to_contain_text("Amount: 500.00 USD → 450.00 USD")
        expect(alice.locator(".tool-card .tool-result")).to_contain_text("450.00")
        shoot("reloaded")

        assert not errors, f"JavaScript errors: {errors}"
    except Exception:
        for who, page in (("alice", alice), ("finn", finn)):
            if page.url.startswith("http"):
                page.screenshot(path=str(artifacts_dir / f"FAILED-transfer-{who}.png"), full_page=True)
        raise
    finally:
        ctx_a.close()
        ctx_b.close()
