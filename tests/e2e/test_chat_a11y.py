"""The chat for people who do not see it or use no mouse (the outside accessibility probe's findings):

- what ends is said once in a polite live region of its own (#chat-announcer): a finished reply, an
  approval's outcome, a run's error; never the streamed tokens, never the history a page opens with;
- the waiting line's countdown is a timer no live region re-reads every second;
- focus never falls to <body>: sending a message that pauses for approval, Approve, Cancel / Escape in
  the card's panels, Withdraw going away, New chat;
- at 400 % zoom (320x256) the conversation, the card and the composer can all be reached and read.
"""

import re

from chat_helpers import T, new_chat, send
from playwright.sync_api import expect

ANNOUNCED = "() => Array.from(document.querySelectorAll('#chat-announcer > *'), p => p.textContent)"
# what has focus: its id, else the approval card it is, else its tag
FOCUSED = """() => { const a = document.activeElement;
    if (!a || a === document.body) return 'BODY';
    if (a.id) return '#' + a.id;
    if (a.matches('.approval-card')) return 'card:' + a.dataset.approvalId;
    return a.tagName + ':' + (a.dataset.act || a.textContent.trim().slice(0, 30)); }"""


def announced(page):
    return page.evaluate(ANNOUNCED)


def focused(page):
    return page.evaluate(FOCUSED)


def wait_focus(page, expected):
    page.wait_for_function(f"expected => ({FOCUSED})() === expected", arg=expected, timeout=T)


def _transfer(page, amount):
    send(page, f"Transfer ${amount} from account 1234567890 to account 0987654321")
    approval = page.locator(".tool-card", has_text="transfer_money").locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    expect(page.locator("#run-status")).to_contain_text("Waiting for finance", timeout=T)
    return approval, approval.get_attribute("data-approval-id")


def _cancel_request(page, ref):
    send(page, f"Cancel my subscription {ref}")
    approval = page.locator(".tool-card", has_text="cancel_subscription").last.locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    expect(page.locator("#composer")).to_be_disabled(timeout=T)
    return approval, approval.get_attribute("data-approval-id")


def test_a_finished_reply_is_said_once_and_history_never(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    # the log itself stays silent (its tokens are never read); the announcer says what ends
    expect(page.locator("#messages")).to_have_attribute("aria-live", "off")
    expect(page.locator("#chat-announcer")).to_have_attribute("aria-live", "polite")
    send(page, "What's the balance of account 1234567890?")
    expect(page.locator(".tool-card", has_text="check_balance").locator(".tool-result")).to_contain_text(
        "1234567890 holds", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    page.wait_for_function(f"() => ({ANNOUNCED})().some(t => t.includes('1234567890 holds'))", timeout=T)
    said = announced(page)
    replies = [t for t in page.locator("#messages .msg-assistant .msg-body").all_text_contents() if t.strip()]
    # one sentence per finished reply, each whole (not a token of it), none twice
    assert len(said) == len(replies), (said, replies)
    for sentence, reply in zip(said, replies, strict=True):
        assert sentence == "Banking assistant replied: " + " ".join(reply.split()), (sentence, reply)

    # a reload opens with the history: nothing of it is said again
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(page.locator("#messages .msg-assistant .msg-body", has_text="1234567890 holds")).to_be_visible(timeout=T)
    assert announced(page) == []


def test_finn_rejecting_is_said_to_the_requester_and_her_countdown_is_not(people):
    alice, finn = people("alice"), people("finn")
    page = alice.page
    new_chat(page)
    approval, approval_id = _transfer(page, 500)
    until = page.locator("#chat-state-until")
    expect(until).to_contain_text("expires in")
    # the countdown changes every second: it is a timer no live region re-reads
    live = until.evaluate("n => { const r = n.closest('[aria-live]'); return r && r.getAttribute('aria-live'); }")
    assert live == "off", live
    expect(until).to_have_attribute("role", "timer")
    assert [t for t in announced(page) if not t.startswith("Banking assistant replied: ")] == []

    finn.page.goto(f"/inbox/{approval_id}/")
    finn.page.locator("#feedback").fill("Account not verified")
    finn.page.locator("#reject").click()
    finn.page.wait_for_url(re.compile(r"held="), timeout=T)

    expect(approval.locator(".status-badge")).to_have_text("Rejected", timeout=T)
    expect(page.locator(".msg-assistant .msg-body", has_text="I did not go ahead").last).to_be_visible(timeout=T)
    page.wait_for_function(f"() => ({ANNOUNCED})().some(t => t.includes('I did not go ahead'))", timeout=T)
    said = announced(page)
    outcome = [t for t in said if t.startswith("Rejected by finn: ")]
    assert len(outcome) == 1, said
    assert "Transfer" in outcome[0] and outcome[0].endswith("Feedback: Account not verified"), outcome
    replies = [t for t in said if t.startswith("Banking assistant replied: ") and "I did not go ahead" in t]
    assert len(replies) == 1, said
    assert said.index(outcome[0]) < said.index(replies[0])  # the outcome, then what the assistant made of it
    alice.shoot("rejected-said")


def test_a_run_error_is_said_once_and_not_again_on_reload(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    send(page, "Simulate a model outage")
    expect(page.locator("#run-error")).to_be_visible(timeout=T)
    page.wait_for_function(f"() => ({ANNOUNCED})().length > 0", timeout=T)
    said = announced(page)
    assert len(said) == 1 and "could not be reached" in said[0], said
    # the banner is no second (assertive) announcement of the same error
    assert page.locator("#run-error").get_attribute("role") is None
    page.reload()
    expect(page.locator("#run-error")).to_be_visible(timeout=T)  # still shown, as history
    assert announced(page) == []


def test_focus_follows_the_approval_card_and_comes_back_to_the_composer(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    wait_focus(page, "#composer")  # New chat: its composer, not <body>

    # Enter sends; the composer turns off while the card asks her: the card has focus, and its first
    # action is the next Tab
    approval, approval_id = _cancel_request(page, "sub_911")
    wait_focus(page, f"card:{approval_id}")
    page.keyboard.press("Tab")
    assert focused(page) == "BUTTON:approve"
    page.keyboard.press("Enter")
    expect(approval.locator(".status-badge")).to_have_text("Approved", timeout=T)
    wait_focus(page, "#composer")  # the buttons went with the decision; the composer takes text again
    page.wait_for_function(f"() => ({ANNOUNCED})().some(t => t.startsWith('Approved: '))", timeout=T)
    approved = [t for t in announced(page) if t.startswith("Approved")]
    assert len(approved) == 1 and approved[0].startswith("Approved: \u201cCancel subscription sub_911"), approved
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)


def test_cancel_and_escape_close_the_cards_panels_back_to_their_button(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    approval, approval_id = _cancel_request(page, "sub_912")
    edit = approval.locator('[data-act="edit"]')
    edit.focus()
    page.keyboard.press("Enter")
    editor = approval.get_by_label("Arguments (JSON)")
    expect(editor).to_be_focused()
    editor.fill('{"subscription_id": ')
    approval.locator('[data-act="approve-edits"]').click()
    error = approval.locator(".approval-error")
    expect(error).to_be_visible()
    # the JSON error belongs to its text box
    expect(editor).to_have_attribute("aria-invalid", "true")
    expect(editor).to_have_attribute("aria-describedby", error.get_attribute("id"))
    alice.shoot("json-error")
    approval.locator('.approval-editor:not([hidden]) [data-act="cancel"]').focus()
    page.keyboard.press("Enter")
    expect(editor).to_be_hidden()
    assert focused(page) == "BUTTON:edit"
    expect(edit).to_have_attribute("aria-expanded", "false")
    expect(editor).not_to_have_attribute("aria-invalid", "true")

    # Escape in the Reject panel closes it, back to Reject
    page.keyboard.press("Tab")
    assert focused(page) == "BUTTON:reject"
    page.keyboard.press("Enter")
    feedback = approval.get_by_label("Feedback for the agent (optional)")
    expect(feedback).to_be_focused()
    page.keyboard.press("Escape")
    expect(feedback).to_be_hidden()
    assert focused(page) == "BUTTON:reject"
    expect(approval.locator('[data-act="reject"]')).to_have_attribute("aria-expanded", "false")
    # and the card still decides
    page.keyboard.press("Enter")
    expect(feedback).to_be_focused()
    approval.locator('[data-act="confirm-reject"]').focus()
    page.keyboard.press("Enter")
    expect(approval.locator(".status-badge")).to_have_text("Rejected", timeout=T)
    wait_focus(page, "#composer")


def test_withdraw_going_away_leaves_focus_on_the_composer(people):
    alice, finn = people("alice"), people("finn")
    page = alice.page
    new_chat(page)
    approval, approval_id = _transfer(page, 26)
    # not hers to decide: the card she waits on has focus
    wait_focus(page, f"card:{approval_id}")
    page.locator("#stop").focus()
    assert focused(page) == "#stop"
    finn.page.goto(f"/inbox/{approval_id}/")
    finn.page.locator("#feedback").fill("Not today.")
    finn.page.locator("#reject").click()
    finn.page.wait_for_url(re.compile(r"held="), timeout=T)
    expect(page.locator("#stop")).to_be_hidden(timeout=T)
    wait_focus(page, "#composer")


def test_the_chat_can_be_read_and_used_at_400_percent_zoom(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    send(page, "What's the balance of account 1234567890?")
    expect(page.locator(".msg-assistant .msg-body", has_text="1234567890 holds")).to_be_visible(timeout=T)
    approval, _ = _transfer(page, 27)
    expect(page.locator("#chat-state-until")).to_contain_text("expires in")
    for width, height in ((1280, 800), (640, 480)):
        page.set_viewport_size({"width": width, "height": height})
        alice.shoot(f"{width}x{height}")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.set_viewport_size({"width": 1280, "height": 800})
    # the full-height layout stays where there is room for it: the conversation scrolls inside it
    assert page.evaluate("document.documentElement.scrollHeight <= innerHeight + 1")

    page.set_viewport_size({"width": 320, "height": 256})
    page.evaluate("window.scrollTo(0, 0)")
    alice.shoot("320x256-top")
    # the conversation is not squeezed into a slit: all of it is laid out, and the page scrolls to it
    conv = page.evaluate("""() => { const c = document.getElementById('conversation');
        return {client: c.clientHeight, scroll: c.scrollHeight}; }""")
    assert conv["client"] >= conv["scroll"] - 1 and conv["client"] > 200, conv
    assert page.evaluate("document.documentElement.scrollHeight > innerHeight")
    page.keyboard.press("End")  # the page itself scrolls (it did not: body overflow hidden)
    page.wait_for_function("() => window.scrollY > 0", timeout=T)
    # nothing runs off the right edge, the countdown least of all
    assert page.evaluate("document.documentElement.scrollWidth") <= 320
    right = page.locator("#chat-state-until").evaluate("n => n.getBoundingClientRect().right")
    assert right <= 320, right
    # the reply, the card and the composer can each be brought on screen and read
    for locator in (page.locator(".msg-assistant .msg-body", has_text="1234567890 holds"),
                    approval.locator(".approval-message"), page.locator("#composer")):
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 320 and box["height"] > 10, box
        assert box["y"] >= 0 and box["y"] < 256, box
    alice.shoot("320x256-composer")


def test_her_own_withdraw_is_said_once(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    approval, _ = _transfer(page, 28)
    expect(page.locator("#stop")).to_have_text("Withdraw", timeout=T)
    page.locator("#stop").click()
    expect(approval.locator(".status-badge")).to_have_text("Cancelled", timeout=T)
    expect(page.locator("#run-status-text")).to_have_text("Withdrawn: nothing waits any more.", timeout=T)
    # the run's status says it; the card's outcome is not said a second time
    assert not [s for s in announced(page) if s.startswith("Withdrawn")], announced(page)


def test_escape_closes_a_phone_drawer_and_gives_focus_back(people):
    alice = people("alice", viewport={"width": 390, "height": 700})
    page = alice.page
    new_chat(page)
    send(page, "What's the balance of account 1234567890?")
    expect(page.locator(".msg-assistant .msg-body", has_text="1234567890 holds")).to_be_visible(timeout=T)
    chats, sidebar = page.locator("#toggle-chats"), page.locator("#chat-sidebar")
    chats.click()
    expect(chats).to_have_attribute("aria-expanded", "true")
    expect(sidebar).to_be_visible()
    sidebar.locator("a, button").first.focus()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    expect(chats).to_have_attribute("aria-expanded", "false")
    expect(chats).to_be_focused()
    # a rename's Escape inside the drawer cancels the rename only
    chats.click()
    item = sidebar.locator(".thread-item").first
    item.locator('[data-thread-act="rename"]').click()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_visible()
    expect(item.locator('[data-thread-act="rename"]')).to_be_focused()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    expect(chats).to_be_focused()
