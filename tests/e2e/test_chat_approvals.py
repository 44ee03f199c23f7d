"""Approval cards in the chat, for every status, decided in place or elsewhere.

- cancel_subscription is routed to the requester: alice approves, edits or rejects it in the card,
  and cannot write while it waits on her.
- transfer_money is routed to finance: finn decides in his own browser (another context) and
  alice's card changes live; it can also expire, or alice can withdraw it with Stop.
"""

import re

import pytest
from chat_helpers import (
    T,
    assert_same_as_server,
    manage_shell,
    new_chat,
    run_events,
    send,
)
from playwright.sync_api import expect

# Records every text the page shows in a tool card's arguments box, to see them fill in.
WATCH_ARGS = """() => {
    window.__argsSeen = [];
    new MutationObserver(() => {
        for (const pre of document.querySelectorAll('.tool-card .tool-args')) {
            const t = pre.textContent;
            if (t && window.__argsSeen[window.__argsSeen.length - 1] !== t) window.__argsSeen.push(t);
        }
    }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
}"""


def test_requester_routed_approval_decided_in_place(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    page.evaluate(WATCH_ARGS)
    send(page, "Cancel my subscription sub_123")

    card = page.locator(".tool-card", has_text="cancel_subscription")
    approval = card.locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    expect(approval).to_contain_text("Waiting for your decision")
    expect(approval.locator(".countdown")).to_have_text(re.compile(r"^expires in \d+ (h|min|s)\b"))
    expect(approval).to_contain_text("Cancel subscription sub_123")
    expect(card.locator(".tool-args")).to_contain_text('"subscription_id": "sub_123"')
    # The arguments filled in as they streamed: the card showed partial JSON before the whole.
    args_events = [e for e in run_events(page, ["TOOL_CALL_ARGS"])]
    assert len(args_events) >= 2
    final_raw = "".join(e["delta"] for e in args_events)
    seen = page.evaluate("window.__argsSeen")
    assert any(final_raw.startswith(t) and t != final_raw for t in seen), seen
    # Waiting on her own decision: the composer is off until she answers.
    expect(page.locator("#composer")).to_be_disabled()
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#run-status")).to_contain_text("Waiting for you: approve or reject")
    alice.shoot("waiting")

    # Keyboard: the Approve button takes focus and Enter decides.
    approve = approval.get_by_role("button", name="Approve", exact=True)
    approve.focus()
    page.keyboard.press("Enter")
    expect(approval.locator(".status-badge")).to_have_text("Approved", timeout=T)
    expect(approval).to_contain_text("by alice")
    expect(approval.locator(".approval-actions")).to_have_count(0)
    expect(card.locator(".tool-result")).to_contain_text("sub_123", timeout=T)
    expect(page.locator(".msg-assistant .msg-body", has_text="Done.").last).to_be_visible(timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    expect(page.locator("#composer")).to_be_enabled()
    assert_same_as_server(page, thread)
    status = page.request.get(f"/api/approvals/?thread={thread}").json()["results"][0]["status"]
    assert status == "approved"
    alice.shoot("approved")


@pytest.mark.parametrize("how", ["edit", "reject"])
def test_requester_edits_or_rejects_in_place(people, live_stack, how):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    send(page, "Cancel my subscription sub_700")
    approval = page.locator(".tool-card", has_text="cancel_subscription").locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)

    if how == "edit":
        manage_shell(live_stack, "from django.contrib.auth.models import User\n"
                                 "from agents.catalog.models import Subscription\n"
                                 "Subscription.objects.get_or_create(ref='sub_701', defaults={\n"
                                 "    'owner': User.objects.get(username='alice'), 'plan': 'Basic'})\n")
        approval.get_by_role("button", name="Edit").click()
        editor = approval.get_by_label("Arguments (JSON)")
        expect(editor).to_be_focused()
        editor.fill('{"subscription_id": 7}')
        approval.get_by_role("button", name="Approve with edits").click()
        # the schema says text; the argument is named by its label
        expect(approval.locator(".approval-error")).to_contain_text("Subscription:", timeout=T)
        expect(approval.locator(".status-badge")).to_have_text("Pending")
        # one that is nobody's is refused before anyone approves it, as someone else's would be
        editor.fill('{"subscription_id": "sub_799"}')
        approval.get_by_role("button", name="Approve with edits").click()
        expect(approval.locator(".approval-error")).to_contain_text("subscription sub_799 is not alice's", timeout=T)
        expect(approval.locator(".status-badge")).to_have_text("Pending")
        editor.fill('{"subscription_id": "sub_701"}')
        alice.shoot("editing")
        approval.get_by_role("button", name="Approve with edits").click()
        expect(approval.locator(".status-badge")).to_have_text("Approved with edits", timeout=T)
        expect(approval.locator(".approval-diff")).to_have_text("Subscription: sub_700 → sub_701")
        # the tool ran with the edited arguments
        expect(page.locator(".tool-card .tool-result")).to_contain_text("Subscription sub_701 (Basic) is cancelled.",
                                                                       timeout=T)
    else:
        approval.get_by_role("button", name="Reject", exact=True).click()
        feedback = approval.get_by_label("Feedback for the agent (optional)")
        expect(feedback).to_be_focused()
        feedback.fill("Keep it until the end of the month.")
        alice.shoot("rejecting")
        approval.locator('[data-act="confirm-reject"]').click()
        expect(approval.locator(".status-badge")).to_have_text("Rejected", timeout=T)
        expect(approval.locator(".approval-feedback")).to_have_text("Keep it until the end of the month.")
        expect(page.locator(".msg-assistant .msg-body", has_text="I did not go ahead").last).to_be_visible(timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    expect(page.locator("#composer")).to_be_enabled()
    assert_same_as_server(page, thread)
    alice.shoot(how)


def _transfer(page, amount):
    send(page, f"Transfer ${amount} from account 1234567890 to account 0987654321")
    card = page.locator(".tool-card", has_text="transfer_money")
    approval = card.locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    expect(approval).to_contain_text("Awaiting review by finance")
    expect(approval.locator(".approval-actions")).to_have_count(0)  # not hers to decide
    return card, approval, approval.get_attribute("data-approval-id")


def test_group_routed_card_changes_when_finn_decides_elsewhere(people):
    alice, finn = people("alice"), people("finn")
    page = alice.page
    thread = new_chat(page)
    card, approval, approval_id = _transfer(page, 25)
    expect(approval.locator(".countdown")).to_contain_text("expires in")
    # Not her decision: the chat waits on finance (Send is off as when she decides), and
    # Withdraw would take the request back.
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#run-status")).to_contain_text("Waiting for finance to decide on")
    expect(page.locator("#stop")).to_have_text("Withdraw")
    alice.shoot("awaiting-finance")

    finn.page.goto(f"/inbox/{approval_id}/")
    finn.page.locator("#feedback").fill("Please use the standing order instead.")
    finn.shoot("rejecting")
    finn.page.locator("#reject").click()
    finn.page.wait_for_url(re.compile(r"held="), timeout=T)  # on to the next request, with an Undo

    # alice's page changes without a reload.
    expect(approval.locator(".status-badge")).to_have_text("Rejected", timeout=T)
    expect(approval).to_contain_text("by finn")
    expect(approval.locator(".approval-feedback")).to_have_text("Please use the standing order instead.")
    expect(card.locator(".tool-outcome")).to_have_text("Rejected, so it was not run.", timeout=T)
    expect(card.locator(".tool-status")).to_have_text("Rejected")
    expect(page.locator(".msg-assistant .msg-body", has_text="I did not go ahead").last).to_be_visible(timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    expect(page.locator("#stop")).to_be_hidden()
    assert_same_as_server(page, thread)
    alice.shoot("rejected-by-finn")


def test_group_routed_request_expires(people, live_stack):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    card, approval, approval_id = _transfer(page, 30)
    # The deadline passes (set to now, then expired by the same service the beat task calls).
    result = manage_shell(live_stack, (
        "from django.utils import timezone\n"
        "from approvals.models import ApprovalRequest\n"
        "from approvals import services\n"
        f"ApprovalRequest.objects.filter(pk={approval_id!r}).update(expires_at=timezone.now())\n"
        f"print(services.expire({approval_id!r}))\n"
    ))
    assert result == "True"
    expect(approval.locator(".status-badge")).to_have_text("Expired", timeout=T)
    expect(approval).not_to_contain_text("timed out")  # the engine's sentence for the model, not for alice
    expect(approval.locator(".countdown")).to_have_count(0)
    expect(card.locator(".tool-outcome")).to_have_text("Nobody decided in time, so it was not run.", timeout=T)
    expect(card.locator(".tool-status")).to_have_text("Expired")
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    assert_same_as_server(page, thread)
    alice.shoot("expired")


def test_stop_withdraws_a_waiting_request(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    card, approval, approval_id = _transfer(page, 35)
    page.reload()  # Stop must work from the snapshots alone, too
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(page.locator("#run-status")).to_contain_text("Waiting for finance")
    page.locator("#stop").click()

    expect(approval.locator(".status-badge")).to_have_text("Cancelled", timeout=T)
    expect(approval).to_contain_text("by alice")
    expect(card.locator(".tool-outcome")).to_have_text("Withdrawn before anyone decided, so it was not run.", timeout=T)
    expect(card.locator(".tool-status")).to_have_text("Cancelled")
    expect(page.locator("#run-status")).to_contain_text("Withdrawn", timeout=T)
    assert run_events(page, ["RUN_FINISHED"])[-1]["outcome"] == {"type": "cancelled"}
    expect(page.locator("#stop")).to_be_hidden()
    assert page.request.get(f"/api/approvals/{approval_id}/").json()["status"] == "cancelled"
    alice.shoot("withdrawn")

    # The thread stays usable.
    send(page, "What's the balance of account 1234567890?")
    expect(page.locator(".tool-card", has_text="check_balance").locator(".tool-result")).to_contain_text(
        "1234567890 holds", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    assert_same_as_server(page, thread)


def test_always_allow_in_this_thread_then_revoke(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    send(page, "Cancel my subscription sub_801")
    first = page.locator(".tool-card", has_text="cancel_subscription").locator(".approval-card")
    expect(first.locator(".status-badge")).to_have_text("Pending", timeout=T)
    first.get_by_label(re.compile("Always allow cancel_subscription in this thread")).check()
    alice.shoot("always-allow")
    first.get_by_role("button", name="Approve", exact=True).click()
    expect(first.locator(".status-badge")).to_have_text("Approved", timeout=T)
    grants = page.locator("#grants")
    expect(grants).to_have_text(re.compile(r"^Always allowed in this chat:\s*cancel_subscription\s*Revoke$"), timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)

    # The next cancellation in this thread runs without asking.
    send(page, "Cancel my subscription sub_802")
    second = page.locator(".tool-card", has_text="sub_802")
    expect(second.locator(".tool-outcome")).to_contain_text("no subscription sub_802", timeout=T)
    expect(second.locator(".approval-card")).to_have_count(0)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    alice.shoot("ran-without-asking")

    # Revoked: it asks again.
    grants.get_by_role("button", name="Revoke: always allow cancel_subscription").click()
    expect(grants).to_be_hidden(timeout=T)
    assert page.request.get(f"/api/grants/?thread={thread}&active=true").json()["count"] == 0
    send(page, "Cancel my subscription sub_803")
    third = page.locator(".tool-card", has_text="sub_803").locator(".approval-card")
    expect(third.locator(".status-badge")).to_have_text("Pending", timeout=T)
    third.get_by_role("button", name="Reject", exact=True).click()
    third.locator('[data-act="confirm-reject"]').click()
    expect(third.locator(".status-badge")).to_have_text("Rejected", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    assert_same_as_server(page, thread)


def test_a_request_nobody_can_approve_says_so_in_the_chat(people, live_stack):
    """finance has nobody who may decide: alice's card says so (live and after a reload) instead of
    only "awaiting review", as the admins are told."""
    finance = "from django.contrib.auth.models import Group, User\nfinn = User.objects.get(username='finn')\n"
    manage_shell(live_stack, finance + "finn.groups.remove(Group.objects.get(name='finance'))\n")
    try:
        alice = people("alice")
        page = alice.page
        new_chat(page)
        card, approval, approval_id = _transfer(page, 45)
        said = "Nobody can approve this request right now. The admins have been told."
        expect(approval.locator(".approval-unreachable")).to_have_text(said)
        expect(page.locator("#run-status")).to_contain_text(said)
        alice.shoot("nobody-can-approve")
        page.reload()
        expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        expect(approval.locator(".approval-unreachable")).to_have_text(said, timeout=T)
        # withdrawn, it says nothing of the kind
        page.locator("#stop").click()
        expect(approval.locator(".status-badge")).to_have_text("Cancelled", timeout=T)
        expect(approval.locator(".approval-unreachable")).to_have_count(0)
    finally:
        manage_shell(live_stack, finance + "finn.groups.add(Group.objects.get(name='finance'))\n")
