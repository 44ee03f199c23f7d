"""The chat on a phone (tests for the phone findings P12, P13, P17): a short screen where the page
scrolls follows the answer, Withdraw says what it does and asks first, Back closes an open drawer."""

import re

import pytest
from chat_helpers import TOUCH, manage_shell, new_chat, xadd_events
from inbox_e2e import T
from playwright.sync_api import expect

LANDSCAPE = {"width": 863, "height": 360}  # a Pixel 7 held sideways
PORTRAIT = {"width": 412, "height": 839}


@pytest.fixture
def alice_on(people):
    return lambda viewport, touch=False: people("alice", viewport=viewport, **(TOUCH if touch else {}))


@pytest.fixture
def many_chats(live_stack):
    """alice has many chats: beside the conversation the list of them runs on far below the composer (where
    the page scrolls, the page's end was the list's, and following the answer put it above the window)."""
    manage_shell(live_stack, "from django.contrib.auth.models import User\n"
                             "from agents import services\n"
                             "alice = User.objects.get(username='alice')\n"
                             "for i in range(60): services.create_thread(alice, 'banking', title=f'An older chat {i}')\n")


IN_WINDOW = """s => { const r = document.querySelector(s).getBoundingClientRect();
      return r.bottom <= window.innerHeight + 1 && r.bottom > 0; }"""


def _in_window(page, selector):
    return page.evaluate(IN_WINDOW, selector)


def _comes_into_window(page, selector):
    """The page follows on its next frames (the last event's layout may land after the text): waited for."""
    page.wait_for_function(IN_WINDOW, arg=selector, timeout=T)
    return True


def test_on_a_short_screen_the_page_follows_the_answer_and_opens_at_the_latest(alice_on, many_chats):
    alice = alice_on(LANDSCAPE)
    page = alice.page
    new_chat(page)
    page.locator("#composer").fill("Tell me a long story")
    page.locator("#composer").press("Enter")
    expect(page.locator("#messages .msg-assistant")).to_have_count(1, timeout=T)
    expect(page.locator("#messages .msg-assistant.streaming")).to_have_count(0, timeout=T)
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_contain_text("The end.")
    # the page is what scrolls here, and it followed: the end of the answer and the composer are in view
    assert page.evaluate("getComputedStyle(document.getElementById('conversation')).overflowY") == "visible"
    assert page.evaluate("window.scrollY") > 0
    assert _comes_into_window(page, "#messages .msg-assistant:last-of-type"), "the answer's end is below the window"
    assert _comes_into_window(page, "#composer")
    alice.shoot("followed")
    # opened again: at the latest message, not the page's top
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    expect(page.locator("#messages .msg-assistant")).to_have_count(1)
    page.wait_for_function("window.scrollY > 0", timeout=T)
    assert _in_window(page, "#composer")


def _say(live_stack, thread, run_id, *texts):
    """Answers in the thread, appended as a worker would: the socket relays them together, so the new
    messages are laid out before the first of their texts is."""
    events = [{"type": "RUN_STARTED", "threadId": thread, "runId": run_id}]
    for n, text in enumerate(texts):
        message = f"{run_id}-{n}"
        events += [{"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
                   {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": text},
                   {"type": "TEXT_MESSAGE_END", "messageId": message}]
    xadd_events(live_stack, thread, [*events, {"type": "RUN_FINISHED", "threadId": thread, "runId": run_id}])


# Where the reader is and whether an element's end is in view, in whichever scrolls: the page on a short
# screen, the conversation box on a tall one.
AT_TOP = """atTop => { const c = document.getElementById('conversation');
      const top = getComputedStyle(c).overflowY === 'visible' ? window.scrollY : c.scrollTop;
      return (top === 0) === atTop; }"""
IN_VIEW = """s => { const c = document.getElementById('conversation');
      const r = document.querySelector(s).getBoundingClientRect();
      const end = getComputedStyle(c).overflowY === 'visible' ? window.innerHeight : c.getBoundingClientRect().bottom;
      return r.bottom <= end + 1 && r.bottom > 0; }"""


@pytest.mark.parametrize(("viewport", "scrolls"), [(LANDSCAPE, "visible"), ({"width": 900, "height": 520}, "auto")],
                         ids=["page-scrolls", "box-scrolls"])
def test_a_reader_who_scrolled_up_stays_there_and_is_followed_again_back_at_the_end(
        alice_on, live_stack, many_chats, viewport, scrolls):
    alice = alice_on(viewport)
    page = alice.page
    thread = new_chat(page)
    assert page.evaluate("getComputedStyle(document.getElementById('conversation')).overflowY") == scrolls
    page.locator("#composer").fill("Tell me a long story")
    page.locator("#composer").press("Enter")
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_contain_text("The end.", timeout=T)
    _say(live_stack, thread, "read-0", "The story went on. " * 150)  # the question is far from the end
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_contain_text("went on", timeout=T)
    page.wait_for_function(AT_TOP, arg=False, timeout=T)
    # the reader goes back up to read the question; what arrives meanwhile does not pull them down
    page.locator("#messages .msg-user").first.hover()
    page.mouse.wheel(0, -100000)
    page.wait_for_function(AT_TOP, arg=True, timeout=T)
    _say(live_stack, thread, "read-1", "A first afterthought.")
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_have_text("A first afterthought.", timeout=T)
    page.wait_for_function("document.body.dataset.chatState === 'idle'", timeout=T)
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")  # a follow's frame
    assert page.evaluate(AT_TOP, True)
    # back at the end (where the page scrolls, as far as the composer: the chat list runs on below it), the
    # page follows again, though the new messages are laid out before their text
    page.mouse.wheel(0, 100000 if scrolls == "auto" else page.evaluate(
        "document.getElementById('composer-form').getBoundingClientRect().bottom - window.innerHeight"))
    page.wait_for_function(IN_VIEW, arg="#messages .msg-assistant:last-of-type", timeout=T)
    _say(live_stack, thread, "read-2", "A second afterthought.", "A third.", "And a fourth, the last.")
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_have_text("And a fourth, the last.", timeout=T)
    page.wait_for_function(IN_VIEW, arg="#messages .msg-assistant:last-of-type", timeout=T)
    assert _comes_into_window(page, "#composer")


def test_withdraw_says_what_it_does_on_the_page(alice_on):
    alice = alice_on(PORTRAIT, touch=True)
    page = alice.page
    new_chat(page)
    page.locator("#composer").fill("Transfer $500 from account 1234567890 to account 0987654321")
    page.locator("#send").tap()
    approval = page.locator(".tool-card", has_text="transfer_money").locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    stop = page.locator("#stop")
    expect(stop).to_have_text("Withdraw")
    note = page.locator("#withdraw-note")
    expect(note).to_be_visible()
    expect(note).to_have_text("Withdraw takes your request back from finance before they decide: it will not run.")
    expect(stop).to_have_attribute("aria-describedby", "withdraw-note")
    alice.shoot("withdraw-said")


def test_back_closes_an_open_drawer_before_it_leaves_the_chat(alice_on):
    alice = alice_on(PORTRAIT, touch=True)
    page = alice.page
    new_chat(page)
    chat_url = page.url
    page.locator("#toggle-chats").tap()
    sidebar = page.locator("#chat-sidebar")
    expect(sidebar).to_have_class(re.compile(r"\bdrawer-open\b"))
    page.go_back()  # the phone's Back gesture
    expect(sidebar).not_to_have_class(re.compile(r"\bdrawer-open\b"))
    assert page.url == chat_url
    expect(page.locator("#toggle-chats")).to_have_attribute("aria-expanded", "false")
    # the toggle closes it as before, and leaves no step behind: Back then leaves the chat
    page.locator("#toggle-chats").tap()
    expect(sidebar).to_have_class(re.compile(r"\bdrawer-open\b"))
    page.locator("#toggle-chats").tap()
    expect(sidebar).not_to_have_class(re.compile(r"\bdrawer-open\b"))
    assert page.evaluate("history.state") is None


def test_the_approval_cards_controls_are_finger_sized_on_a_touch_screen(alice_on):
    alice = alice_on(PORTRAIT, touch=True)
    page = alice.page
    new_chat(page)
    page.locator("#composer").fill("Cancel my subscription sub_801")
    page.locator("#send").tap()
    card = page.locator(".tool-card", has_text="cancel_subscription").locator(".approval-card")
    expect(card.locator(".status-badge")).to_have_text("Pending", timeout=T)
    allow = card.locator(".allow-always")
    for target in (allow, card.get_by_role("button", name="Approve", exact=True),
                   card.get_by_role("button", name="Reject", exact=True), page.locator("#send")):
        box = target.bounding_box()
        assert box["width"] >= 44 and box["height"] >= 44, box
    allow.tap()  # the label is the tap target: it ticks the box
    expect(allow.locator("input[type=checkbox]")).to_be_checked()
    box = allow.locator("input[type=checkbox]").bounding_box()
    assert box["width"] >= 24 and box["height"] >= 24, box
