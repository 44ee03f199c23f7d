"""The chat page around the conversation: the agent picker, renaming and deleting chats (own only),
Enter / Shift+Enter, the keyboard, phone width, and no resource from outside the site."""

import re
from urllib.parse import urlparse

from chat_helpers import T, assert_same_as_server, csrf_headers, new_chat, send
from playwright.sync_api import expect


def test_agent_picker_shows_which_tools_need_approval(people):
    alice = people("alice")
    page = alice.page
    page.goto("/chat/")
    page.get_by_label("Agent", exact=True).select_option("banking")
    info = page.locator('.agent-info[data-agent="banking"]')
    expect(info).to_be_visible()
    expect(info.locator(".agent-description")).to_contain_text("transfers money")
    tools = info.locator(".tool-list li")
    expect(tools.filter(has_text="transfer_money")).to_contain_text("needs approval · finance")
    expect(tools.filter(has_text="cancel_subscription")).to_contain_text("needs approval · you")
    expect(tools.filter(has_text="check_balance")).to_contain_text("no review")
    alice.shoot("picker")


def test_rename_and_delete_own_chats_only(people):
    alice, bob = people("alice"), people("bob")
    page = alice.page
    keep = new_chat(page)
    other = new_chat(page)  # the open chat
    page.goto(f"/chat/{keep}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)

    # Rename the open chat: the list, the header and the tab title follow.
    item = page.locator(f'.thread-item[data-thread-id="{keep}"]')
    item.get_by_role("button", name=re.compile("^Rename chat")).click()
    title_box = item.get_by_label("New title")
    expect(title_box).to_be_focused()
    title_box.fill("Rent for May")
    alice.shoot("renaming")
    title_box.press("Enter")
    expect(item.locator(".thread-title")).to_have_text("Rent for May", timeout=T)
    expect(page.locator(".chat-subtitle")).to_have_text("Rent for May")
    expect(page).to_have_title(re.compile("^Rent for May"))
    expect(item.get_by_label("New title")).to_have_count(0)
    expect(item.get_by_role("button", name="Rename chat: Rent for May")).to_be_focused()
    assert page.request.get(f"/api/threads/{keep}/").json()["title"] == "Rent for May"
    # Escape leaves a rename without saving.
    item.get_by_role("button", name=re.compile("^Rename chat")).click()
    item.get_by_label("New title").fill("never saved")
    item.get_by_label("New title").press("Escape")
    expect(item.locator(".thread-title")).to_have_text("Rent for May")

    # bob sees none of alice's chats and cannot change them.
    bob.page.goto("/chat/")
    expect(bob.page.locator(f'.thread-item[data-thread-id="{keep}"]')).to_have_count(0)
    assert bob.page.request.patch(f"/api/threads/{keep}/", data={"title": "bob was here"},
                                  headers=csrf_headers(bob.page)).status == 404
    assert bob.page.request.delete(f"/api/threads/{keep}/", headers=csrf_headers(bob.page)).status == 404
    assert bob.page.goto(f"/chat/{keep}/").status == 404
    assert page.request.get(f"/api/threads/{keep}/").json()["title"] == "Rent for May"

    # Delete another chat from the list (inline confirmation; Cancel first).
    other_item = page.locator(f'.thread-item[data-thread-id="{other}"]')
    other_item.get_by_role("button", name=re.compile("^Delete chat")).click()
    confirm = other_item.locator(".thread-confirm")
    expect(confirm).to_contain_text("Delete this chat")
    alice.shoot("confirm-delete")
    confirm.get_by_role("button", name="Cancel").click()
    expect(other_item.locator(".thread-confirm")).to_have_count(0)
    other_item.get_by_role("button", name=re.compile("^Delete chat")).click()
    other_item.locator(".thread-confirm").get_by_role("button", name="Delete").click()
    expect(other_item).to_have_count(0, timeout=T)
    assert page.request.get(f"/api/threads/{other}/").status == 404

    # Delete the open chat: back to the empty chat page.
    item.get_by_role("button", name=re.compile("^Delete chat")).click()
    item.locator(".thread-confirm").get_by_role("button", name="Delete").click()
    page.wait_for_url(re.compile(r"/chat/$"), timeout=T)
    expect(page.locator(f'.thread-item[data-thread-id="{keep}"]')).to_have_count(0)
    alice.shoot("deleted")


def test_the_chat_list_follows_other_tabs(people):
    """A chat made, renamed or deleted in another tab shows in this tab's list when this tab is
    shown again (the browser's visibilitychange / focus; dispatched here, since headless tabs are
    always visible)."""
    alice = people("alice")
    page = alice.page
    opened = new_chat(page)  # this tab shows one chat
    other = alice.ctx.new_page()
    made = new_chat(other)  # another tab makes a chat and asks something in it
    send(other, "What's the balance of account 1234567890?")
    expect(other.locator(".tool-card", has_text="check_balance").locator(".tool-result")).to_contain_text(
        "1234567890 holds", timeout=T)
    item = page.locator(f'.thread-item[data-thread-id="{made}"]')
    expect(item).to_have_count(0)  # this tab has not looked again yet

    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(item.locator(".thread-title")).to_have_text("What's the balance of account 1234567890?", timeout=T)
    expect(page.locator(".thread-item").first).to_have_attribute("data-thread-id", made)  # newest first
    alice.shoot("list-refreshed")

    # renamed elsewhere: this tab's list and header follow the chat it shows
    assert other.request.patch(f"/api/threads/{opened}/", data={"title": "Renamed elsewhere"},
                               headers=csrf_headers(other)).ok
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(page.locator(f'.thread-item[data-thread-id="{opened}"] .thread-title')).to_have_text(
        "Renamed elsewhere", timeout=T)
    expect(page.locator(".chat-subtitle")).to_have_text("Renamed elsewhere")

    # deleted elsewhere: gone here too; the refreshed list's own controls still work
    assert other.request.delete(f"/api/threads/{made}/", headers=csrf_headers(other)).ok
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(item).to_have_count(0, timeout=T)
    mine = page.locator(f'.thread-item[data-thread-id="{opened}"]')
    mine.get_by_role("button", name="Rename chat: Renamed elsewhere").click()
    expect(mine.get_by_label("New title")).to_be_focused()
    mine.get_by_label("New title").press("Escape")
    other.close()


def test_a_chat_with_a_waiting_request_cannot_be_deleted(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    send(page, "Transfer $40 from account 1234567890 to account 0987654321")
    expect(page.locator(".approval-card .status-badge")).to_have_text("Pending", timeout=T)
    item = page.locator(f'.thread-item[data-thread-id="{thread}"]')
    item.get_by_role("button", name=re.compile("^Delete chat")).click()
    item.locator(".thread-confirm").get_by_role("button", name="Delete").click()
    expect(item.locator(".thread-confirm [role=alert]")).to_contain_text("stop it first", timeout=T)
    assert page.request.get(f"/api/threads/{thread}/").ok
    alice.shoot("refused")


def test_enter_sends_and_shift_enter_adds_a_line(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    composer = page.locator("#composer")
    composer.click()
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    expect(composer).to_have_value("first line\nsecond line")
    page.keyboard.press("Enter")
    expect(composer).to_have_value("")
    bubble = page.locator("#messages .msg-user .msg-body").last
    expect(bubble).to_have_text("first line\nsecond line")
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_contain_text("offline demo model", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    messages = page.request.get(f"/api/threads/{thread}/messages/").json()
    assert messages[0]["content"] == "first line\nsecond line"
    assert_same_as_server(page, thread)
    # Enter on an empty composer sends nothing.
    composer.press("Enter")
    expect(page.locator("#messages .msg-user")).to_have_count(1)


def test_keyboard_reaches_every_control(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    page.locator("body").click(position={"x": 1, "y": 1})
    reached = []
    # one Tab per focusable control, and a few more: the chat list grows with the chats other
    # tests left to alice, so a fixed count reached the composer only when they ran first
    focusable = page.locator("a[href], button:not([disabled]), select, textarea, input:not([type=hidden]), "
                             "[tabindex]:not([tabindex='-1'])").count()
    for _ in range(focusable + 5):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("""() => {
            const a = document.activeElement;
            return a ? (a.id || a.getAttribute('aria-label') || a.textContent.trim()).slice(0, 60) : '';
        }"""))
    for target in ("agent-select", "new-chat", "composer", "send"):
        assert target in reached, (target, reached)
    assert any(r.startswith("Rename chat") for r in reached), reached
    assert any(r.startswith("Delete chat") for r in reached), reached
    # The focus ring is visible where focus lands.
    page.locator("#composer").focus()
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    assert thread


def test_phone_width_and_no_outside_resources(people, live_stack):
    alice = people("alice", viewport={"width": 390, "height": 844})
    page = alice.page
    own = urlparse(live_stack.url).netloc
    outside = []
    page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).netloc not in (own, "") else None)
    page.on("websocket", lambda ws: outside.append(ws.url) if urlparse(ws.url).netloc != own else None)

    thread = new_chat(page)
    send(page, "Show me some raw HTML")  # its reply holds an <img> and a link: neither may load anything
    expect(page.locator("#messages .msg-assistant .msg-body").last).to_contain_text("that must stay text", timeout=T)
    send(page, "Cancel my subscription sub_390")
    approval = page.locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    alice.shoot("phone-waiting")

    # Nothing is wider than the screen, and the controls are on it and usable.
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    for locator in (page.locator("#composer"), approval.get_by_role("button", name="Approve", exact=True)):
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    approval.get_by_role("button", name="Approve", exact=True).click()
    expect(approval.locator(".status-badge")).to_have_text("Approved", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    alice.shoot("phone-approved")

    # The pages reference nothing outside the site.
    external = page.evaluate("""() => Array.from(document.querySelectorAll('script[src], link[href], img[src], iframe'))
        .map(e => e.src || e.href).filter(u => u && !u.startsWith(location.origin) && !u.startsWith('data:'))""")
    assert external == []
    assert outside == [], outside
    assert_same_as_server(page, thread)


def test_a_socket_refused_after_sign_out_says_so_and_stops_retrying(people):
    """The server used to refuse a signed-out socket at its handshake: the browser saw only 1006,
    and the page said "Reconnecting…" for ever. It now reads 4401 and tells the person."""
    alice = people("alice")
    page = alice.page
    new_chat(page)
    attempts = []
    page.on("websocket", lambda ws: attempts.append(ws.url))
    alice.ctx.clear_cookies()  # the session is gone (signed out elsewhere, or expired)
    page.evaluate("window.aguiChat.ws.close()")  # the connection drops: the page reopens it
    notice = page.locator("#chat-notice-text")
    expect(notice).to_have_text("This chat is not available to you any more; sign in again or open another chat.")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "closed")
    assert len(attempts) == 1, attempts  # the one reopening, refused with 4401 (not a handshake failure)
    alice.shoot("refused")


def test_a_reload_or_back_keeps_what_was_typed_until_it_is_sent(people):
    alice = people("alice")
    page = alice.page
    thread = new_chat(page)
    composer = page.locator("#composer")
    composer.fill("A long question\nhalf written")
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    expect(composer).to_have_value("A long question\nhalf written")
    page.goto("/chat/")
    page.go_back()
    expect(page).to_have_url(re.compile(rf"/chat/{thread}/$"))
    expect(composer).to_have_value("A long question\nhalf written")
    composer.press("Enter")
    expect(page.locator("#messages .msg-user .msg-body")).to_have_text("A long question\nhalf written")
    # the bubble shows at once, pending until the server has the message: the draft is forgotten then
    # (a reload while the POST is on its way offers it again, since it may not have arrived)
    expect(page.locator("#messages .msg-user.pending")).to_have_count(0)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    expect(composer).to_have_value("")  # sent: not offered again
