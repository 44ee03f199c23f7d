"""The chat's limits as the server counts them: a message's length in characters (an emoji is one,
not the two UTF-16 units a maxlength counts), and the account's hourly runs, where a new chat whose
first message is refused is not left behind."""

import re

from chat_helpers import T, manage_shell, new_chat, send
from playwright.sync_api import expect

MAX_CHARS = 20000  # AGUI_MAX_MESSAGE_CHARS, the live stack's default
RUNS_PER_HOUR = 300  # AGUI_MAX_RUNS_PER_HOUR, the same


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
    expect(page.locator(".msg-user[data-message-id]")).to_have_count(1, timeout=T)  # the server took it
    expect(page.locator(".msg-assistant").first).to_be_visible(timeout=T)
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


def test_a_new_chat_refused_at_the_hourly_run_limit_is_not_left_behind(people, live_stack):
    bob = people("bob")
    page = bob.page
    refused = new_chat(page)
    # bob has started the most runs an hour allows (in another chat of his)
    busy = manage_shell(live_stack, (
        "from django.contrib.auth.models import User\n"
        "from agents import services\n"
        "from agents.models import Run\n"
        "bob = User.objects.get(username='bob')\n"
        "t = services.create_thread(bob, 'banking', title='Earlier runs')\n"
        f"Run.objects.bulk_create([Run(thread=t, status=Run.Status.SUCCEEDED) for _ in range({RUNS_PER_HOUR})])\n"
        "print(t.pk)\n"))
    try:
        text = "What's the balance of account 0987654321?"
        page.locator("#composer").fill(text)
        page.locator("#composer").press("Enter")
        expect(page.locator("#chat-notice-text")).to_have_text(re.compile(
            rf"^This account started {RUNS_PER_HOUR} agent runs in the last hour, the most one account may\. "
            r"Nothing was stored: try again in 6[01] minutes\.$"), timeout=T)
        expect(page.locator("#composer")).to_have_value(text)  # what bob typed stays
        # the empty chat is gone: from the list, the server and the address bar
        expect(page.locator(f'.thread-item[data-thread-id="{refused}"]')).to_have_count(0, timeout=T)
        assert page.request.get(f"/api/threads/{refused}/").status == 404
        expect(page).to_have_url(re.compile(r"/chat/$"))
        assert refused not in [t["id"] for t in page.request.get("/api/threads/").json()["results"]]
        bob.shoot("refused")

        # an hour on, Send again: the chat is made anew, with his message
        manage_shell(live_stack, (
            "from datetime import timedelta\n"
            "from django.utils import timezone\n"
            "from agents.models import Run\n"
            f"Run.objects.filter(thread_id={busy!r}).update(created_at=timezone.now() - timedelta(hours=2))\n"))
        page.locator("#composer").press("Enter")
        page.wait_for_url(re.compile(r"/chat/[^/]+/$"), timeout=T)
        made = page.url.rstrip("/").rsplit("/", 1)[-1]
        assert made != refused
        expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
        expect(page.locator(".msg-user .msg-body")).to_have_text(text, timeout=T)
        expect(page.locator(".tool-card", has_text="check_balance").locator(".tool-result")).to_contain_text(
            "0987654321 holds", timeout=T)
        expect(page.locator("#composer")).to_have_value("")
        expect(page.locator(f'.thread-item[data-thread-id="{made}"]')).to_have_count(1)
        expect(page.locator("#run-status")).to_be_hidden(timeout=T)
        send(page, "Thanks")  # an ordinary chat from here on
    finally:
        manage_shell(live_stack, (
            "from agents.models import Thread\n"
            f"Thread.objects.filter(pk={busy!r}).delete()\n"))
