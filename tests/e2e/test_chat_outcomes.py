"""What the person reads in the chat, at a desktop and a phone size: an edited call's card says
what ran (money formatted as money), every way a call can end has its own look and words, a
stopped reply is marked, and none of the words meant for the model (its instructions, policy rule
names, ids, schemas, regexes) reach the page."""

import re
import uuid

import pytest
from chat_helpers import Session, T, close_sessions, csrf_headers, new_chat, send
from playwright.sync_api import expect

SIZES = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}
# Words for the model that must never be shown to the person.
MODEL_WORDS = ["Adjust your plan", "Do not retry", "do not try to reach the same goal", "blocked by policy (",
               "rule 1", "The reviewer changed the arguments", "500.0 ->", "-> 450.0", "responseSchema",
               "does not match", "You answered", "waits on a decision", "explicitly rejected"]


@pytest.fixture(params=list(SIZES))
def people(request, browser, live_stack, login, artifacts_dir):
    made = []
    size = request.param

    def make(who):
        s = Session(browser, live_stack, login, who, artifacts_dir,
                    prefix=f"outcomes-{request.node.name.split('[')[0].replace('test_', '')}-{size}", **SIZES[size])
        s.size = size
        made.append(s)
        return s

    yield make
    close_sessions(request, made)


def assert_no_model_words(page):
    text = page.locator("body").inner_text()
    found = [w for w in MODEL_WORDS if w.lower() in text.lower()]
    assert not found, f"words meant for the model are on the page: {found}"
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text), "an internal id is shown"


def idle(page):
    """The last run is over and nothing waits: the next message can go."""
    expect(page.locator("body")).to_have_attribute("data-chat-state", "idle", timeout=T)
    expect(page.locator("#send")).to_be_enabled()


def by_call(page, card):
    """The same card for good, by its tool call id (its decision buttons go once it is decided)."""
    expect(card).to_be_visible(timeout=T)
    return page.locator(f'.tool-card[data-tool-call-id="{card.get_attribute("data-tool-call-id")}"]')


def border_color(card):
    return card.evaluate("e => getComputedStyle(e).borderLeftColor + ' ' + getComputedStyle(e).borderLeftStyle")


def test_an_edited_transfer_shows_what_ran_and_who_the_chat_waits_for(people):
    alice, finn = people("alice"), people("finn")
    page = alice.page
    amount = 510 if alice.size == "desktop" else 520
    new_chat(page)
    send(page, f"Transfer ${amount} from account 1234567890 to account 0987654321")
    card = page.locator(".tool-card", has_text="transfer_money")
    approval = card.locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    approval_id = approval.get_attribute("data-approval-id")

    # Waiting on finance: said in words, with since and until; Send is off, as when she decides.
    status = page.locator("#run-status")
    expect(status).to_contain_text(f"Waiting for finance to decide on \u201cTransfer {amount}.00 USD from 1234567890")
    expect(page.locator("#chat-state-since")).to_contain_text("asked ")
    expect(page.locator("#chat-state-until")).to_contain_text("decision due by ")
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#composer")).to_be_disabled()
    expect(card.locator(".tool-status")).to_have_text("Waiting")
    assert approval_id not in page.locator("body").inner_text()
    assert_no_model_words(page)
    # one scroll area that fits the screen: nothing widens the page sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    alice.shoot("waiting-for-finance")

    # finn lowers the amount (over the API: the inbox's own pages have their own tests)
    finn.page.goto("/inbox/")
    decided = finn.page.request.post(f"/api/approvals/{approval_id}/decide/", headers=csrf_headers(finn.page), data={
        "decision": "approve", "arguments": {"from_account": "1234567890", "to_account": "0987654321",
                                             "amount": 450, "currency": "USD"}})
    assert decided.ok, decided.text()

    # The card says what ran: its title, its arguments; the change is shown as a change, in money.
    expect(approval.locator(".status-badge")).to_have_text("Approved with edits", timeout=T)
    expect(card.locator(".tool-title")).to_have_text("Transfer 450.00 USD from 1234567890 to 0987654321")
    expect(approval.locator(".approval-message")).to_have_text("Transfer 450.00 USD from 1234567890 to 0987654321")
    expect(card.locator(".tool-args")).to_contain_text('"amount": 450')
    expect(card.locator(".tool-args")).not_to_contain_text(f'"amount": {amount}')
    expect(approval.locator(".approval-diff")).to_have_text(f"Amount: {amount}.00 USD → 450.00 USD")
    expect(approval).to_contain_text("finn changed this before approving")
    expect(card.locator(".tool-status")).to_have_text("Done", timeout=T)
    expect(card.locator(".tool-result")).to_contain_text("Transferred 450.00 USD", timeout=T)
    # the tool's own sentence for the person (in their language); the raw result is what the assistant was told
    expect(card.locator(".tool-outcome")).to_have_text(re.compile(
        r"^Transferred 450\.00 USD from 1234567890 to 0987654321\. New balance of 1234567890: [\d,]+\.\d\d USD\.$"))
    expect(card.locator(".tool-result .tool-section-label")).to_have_text("What the assistant was told")
    reply = page.locator(".msg-assistant .msg-body", has_text="Transferred 450.00 USD").last
    expect(reply).to_contain_text(f"The reviewer changed amount from {amount}.00 USD to 450.00 USD")
    expect(status).to_be_hidden(timeout=T)
    expect(page.locator("#send")).to_be_enabled()
    expect(page.locator("#chat-notice")).to_be_hidden()
    assert_no_model_words(page)
    # every message carries its time
    expect(page.locator(".msg-user .msg-time").first).to_have_text(re.compile(r"\d{1,2}:\d{2}"))
    alice.shoot("edited-and-done")

    page.reload()  # the same from the snapshots
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    card = page.locator(".tool-card", has_text="transfer_money")
    expect(card.locator(".tool-title")).to_have_text("Transfer 450.00 USD from 1234567890 to 0987654321", timeout=T)
    expect(card.locator(".tool-status")).to_have_text("Done")
    expect(card.locator(".approval-diff")).to_have_text(f"Amount: {amount}.00 USD → 450.00 USD")
    expect(page.locator(".msg-assistant .msg-time").first).to_have_text(re.compile(r"\d{1,2}:\d{2}"))
    assert_no_model_words(page)


def test_blocked_rejected_withdrawn_and_stopped_each_look_their_own(people):
    alice = people("alice")
    page = alice.page
    name = f"notes-{alice.size}-{uuid.uuid4().hex[:6]}.txt"  # the sandbox outlives a test run
    new_chat(page, agent="ops")
    if alice.size == "phone":  # no keyboard hint on a touch screen
        assert "Shift+Enter" not in (page.locator("#composer").get_attribute("placeholder") or "")
    else:
        assert "Shift+Enter" in (page.locator("#composer").get_attribute("placeholder") or "")

    send(page, "Delete /etc/hosts")
    blocked = page.locator(".tool-card[data-outcome=blocked]")
    expect(blocked.locator(".tool-status")).to_have_text("Blocked", timeout=T)
    expect(blocked.locator(".tool-outcome")).to_have_text("Blocked: the rules for this tool do not allow it, so it was not run.")
    expect(blocked.locator(".tool-result")).to_be_hidden()
    expect(page.locator(".msg-assistant .msg-body").last).to_contain_text("I did not go ahead", timeout=T)
    assert_no_model_words(page)
    alice.shoot("blocked")

    idle(page)
    send(page, f"Write 'hello' to {name}")
    done = page.locator(".tool-card[data-outcome=done]").last
    expect(done.locator(".tool-status")).to_have_text("Done", timeout=T)
    idle(page)

    # her own confirmation, edited by her: the result does not speak of a reviewer
    send(page, f"Overwrite {name} with 'bye'")
    own = by_call(page, page.locator(".tool-card", has=page.locator(".approval-actions")).last)
    expect(own.locator(".tool-status")).to_have_text("Waiting", timeout=T)
    expect(page.locator("#run-status")).to_contain_text("Waiting for you: approve or reject")
    allow = own.locator(".allow-always")
    box = allow.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"], box  # not clipped
    own.get_by_role("button", name="Edit").click()
    editor = own.locator(".approval-editor textarea.mono")
    editor.fill(editor.input_value().replace('"bye"', '"bye bye"'))
    own.get_by_role("button", name="Approve with edits").click()
    expect(own.locator(".tool-status")).to_have_text("Done", timeout=T)
    expect(own.locator(".approval-diff")).to_have_text("Content: bye → bye bye")
    expect(own).to_contain_text("You changed this before approving")
    expect(page.locator(".msg-assistant .msg-body").last).to_contain_text("You changed content", timeout=T)
    idle(page)
    send(page, f"Overwrite {name} with 'again'")
    rejected = by_call(page, page.locator(".tool-card", has=page.locator(".approval-actions")).last)
    expect(rejected.locator(".tool-status")).to_have_text("Waiting", timeout=T)
    rejected.get_by_role("button", name="Reject").click()
    rejected.locator(".approval-editor textarea").last.fill("Not now")
    rejected.get_by_role("button", name="Reject").last.click()
    expect(rejected.locator(".tool-status")).to_have_text("Rejected", timeout=T)
    expect(rejected.locator(".tool-outcome")).to_have_text("You rejected it, so it was not run.")
    expect(page.locator(".msg-assistant .msg-body").last).to_contain_text("it was rejected (\u201cNot now\u201d)", timeout=T)
    assert_no_model_words(page)
    idle(page)

    # a request a reviewer decides, withdrawn by her
    send(page, "Delete old-notes.txt")
    waiting = page.locator(".tool-card", has_text="delete_file").last
    expect(waiting.locator(".tool-status")).to_have_text("Waiting", timeout=T)
    expect(page.locator("#run-status")).to_contain_text("Waiting for reviewers to decide on")
    expect(page.locator("#send")).to_be_disabled()
    page.locator("#stop").click()
    expect(waiting.locator(".tool-status")).to_have_text("Cancelled", timeout=T)
    expect(waiting.locator(".tool-outcome")).to_have_text("Withdrawn before anyone decided, so it was not run.")
    idle(page)

    looks = {k: border_color(page.locator(f".tool-card[data-outcome={k}]").last) for k in
             ("blocked", "done", "rejected", "cancelled")}
    assert len(set(looks.values())) == len(looks), looks
    assert_no_model_words(page)
    alice.shoot("every-ending")

    # a reply cut off by Stop is marked as stopped (and stays so after a reload)
    send(page, "Tell me a long story")
    expect(page.locator(".msg-assistant.streaming")).to_have_count(1, timeout=T)
    page.locator("#stop").click()
    stopped = page.locator(".msg-assistant.msg-stopped")
    expect(stopped.locator(".msg-stopped-badge")).to_have_text("Stopped", timeout=T)
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(page.locator(".msg-assistant.msg-stopped .msg-stopped-badge")).to_have_text("Stopped", timeout=T)
    expect(page.locator(".tool-card[data-outcome=blocked] .tool-status")).to_have_text("Blocked")
    expect(page.locator(".tool-card[data-outcome=rejected] .tool-status")).to_have_text("Rejected")
    assert_no_model_words(page)
    alice.shoot("stopped")


def test_a_question_is_asked_and_answered_in_plain_words(people):
    alice = people("alice")
    page = alice.page
    new_chat(page, agent="support")
    starters = page.locator("#starters .starter")
    expect(starters.first).to_be_visible()
    page.locator("#starters .starter", has_text=re.compile(r"^I want a refund$")).click()
    question = page.locator(".question-card")
    expect(question).to_contain_text("Refunds asks", timeout=T)
    expect(page.locator("#starters")).to_be_hidden()
    expect(page.locator("#run-status")).to_contain_text("Waiting for your answer")
    expect(page.locator("#send")).to_be_disabled()
    expect(question).to_contain_text("4 to 12 digits")
    field = question.get_by_label("Order number")
    field.fill("abc")
    question.get_by_role("button", name="Answer").click()
    expect(question.locator(".approval-error")).to_have_text("Order number: enter 4 to 12 digits.")
    assert_no_model_words(page)
    assert "\\d" not in page.locator("body").inner_text()
    field.fill("12345")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_contain_text("Your answer: Order number: 12345", timeout=T)
    expect(page.locator("#step-trail")).to_contain_text("Triage → Refunds", timeout=T)
    assert "{" not in question.inner_text()
    assert_no_model_words(page)
    alice.shoot("answered")
