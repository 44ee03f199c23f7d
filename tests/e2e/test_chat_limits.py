"""The chat's limits as the server counts them: a message's length in characters (an emoji is one,
not the two UTF-16 units a maxlength counts)."""

import re

import pytest
from chat_helpers import Session, T, close_sessions, new_chat
from playwright.sync_api import expect

MAX_CHARS = 20000  # AGUI_MAX_MESSAGE_CHARS, the live stack's default


@pytest.fixture
def people(browser, live_stack, login, artifacts_dir, request):
    made = []

    def make(who):
        s = Session(browser, live_stack, login, who, artifacts_dir, prefix=request.node.name.replace("test_", ""))
        made.append(s)
        return s

    yield make
    close_sessions(request, made)


def test_the_composer_takes_as_many_characters_as_the_server_and_says_when_there_are_more(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    composer = page.locator("#composer")
    # a limit's worth of emoji: twice as many UTF-16 units, every one kept and sent
    composer.fill("😀" * MAX_CHARS)
    assert page.evaluate("() => Array.from(document.getElementById('composer').value).length") == MAX_CHARS
    expect(page.locator("#composer-note")).to_have_text("")
    composer.press("Enter")
    expect(composer).to_have_value("")
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    sent = [m for m in page.request.get(f"/api/threads/{thread}/messages/").json() if m["role"] == "user"]
    assert [m["content"] for m in sent] == ["😀" * MAX_CHARS]

    # one more: not cut, not sent, and said
    composer.fill("😀" * (MAX_CHARS + 1))
    expect(page.locator("#composer-note")).to_have_text(
        "Too long to send: a message may have 20,000 characters. Shorten it by 1 character.")
    composer.press("Enter")
    assert page.evaluate("() => Array.from(document.getElementById('composer').value).length") == MAX_CHARS + 1
    expect(page.locator("#composer-note")).to_have_text(re.compile("^Too long to send"))
    assert len([m for m in page.request.get(f"/api/threads/{thread}/messages/").json() if m["role"] == "user"]) == 1
    alice.shoot("too-long")
    composer.press("Backspace")  # fits again: the note goes
    expect(page.locator("#composer-note")).to_have_text("")

