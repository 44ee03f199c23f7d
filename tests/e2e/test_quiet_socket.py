"""A socket that dies without closing (a phone moving between networks, a laptop waking up: no FIN
reaches the browser, which calls the socket open for minutes) is found out and replaced. The pages
ping it (net.js aguiKeepAlive) when they come back (online, shown again) and after a quiet spell; no
pong, and a new socket takes over from where the old one left off. Before, the chat froze mid-answer
with its Stop button up and no "Reconnecting…", and the inbox said "Live" while offline.

The browser's sockets go through Playwright's WebSocket routing, which can stop passing frames either
way on a socket that stays open: the dead connection, as the probe found it through a stalling proxy."""

import re

from chat_helpers import T, new_chat, send
from playwright.sync_api import expect


class Sockets:
    """Every socket a page opens, passed through; `silence()` makes those open now pass nothing more."""

    def __init__(self, page, path):
        self.routes = []
        page.route_web_socket(re.compile(path), self._route)

    def _route(self, ws):
        server = ws.connect_to_server()
        entry = {"dead": False}
        self.pongs = 0

        def down(m):
            if not entry["dead"]:
                self.pongs += '"pong"' in str(m)
                ws.send(m)

        ws.on_message(lambda m: None if entry["dead"] else server.send(m))
        server.on_message(down)
        self.routes.append(entry)

    def wait_for_pong(self, page):
        """Until a pong came back (frames pass while the page is waited on)."""
        for _ in range(T // 100):
            if self.pongs:
                return
            page.wait_for_timeout(100)
        raise AssertionError("no pong came back")

    def silence(self):
        for entry in self.routes:
            entry["dead"] = True


QUICK = "window.aguiKeepAliveMs = {quiet: %d, answer: 1000};"


def test_a_chat_whose_socket_went_quiet_reconnects_when_the_network_comes_back(people):
    alice = people("alice")
    page = alice.page
    page.add_init_script(QUICK % 60_000)  # the quiet spell's own check stays out of this test
    sockets = Sockets(page, r"/ws/threads/")
    new_chat(page)
    send(page, "What's the balance of account 1234567890?")
    expect(page.locator(".msg-assistant .msg-body", has_text="1234567890 holds")).to_be_visible(timeout=T)
    sockets.silence()
    send(page, "Transfer $31 from account 1234567890 to account 0987654321")
    assert page.evaluate("aguiChat.connects") == 1
    page.evaluate("window.dispatchEvent(new Event('online'))")  # the phone is on a network again
    # no pong: a new socket, from where the old one left off (nothing twice)
    expect(page.locator(".approval-card .status-badge")).to_have_text("Pending", timeout=T)
    assert page.evaluate("aguiChat.connects") == 2
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    expect(page.locator(".msg-user")).to_have_count(2)
    expect(page.locator(".approval-card")).to_have_count(1)


def test_a_chat_socket_quiet_for_long_is_asked_and_replaced(people):
    alice = people("alice")
    page = alice.page
    page.add_init_script(QUICK % 1500)
    sockets = Sockets(page, r"/ws/threads/")
    new_chat(page)
    # a live socket answers the ping of its quiet spell and is kept
    sockets.wait_for_pong(page)
    assert page.evaluate("aguiChat.connects") == 1
    sockets.silence()
    send(page, "What's the balance of account 1234567890?")  # said to a socket that hears nothing now
    expect(page.locator(".msg-assistant .msg-body", has_text="1234567890 holds")).to_be_visible(timeout=T)
    assert page.evaluate("aguiChat.connects") == 2


def test_the_inbox_says_it_reconnects_and_fetches_what_it_missed(people):
    finn, alice = people("finn"), people("alice")
    finn.page.add_init_script(QUICK % 60_000)
    sockets = Sockets(finn.page, r"/ws/inbox/")
    finn.page.goto("/inbox/")
    expect(finn.page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    sockets.silence()
    new_chat(alice.page)
    send(alice.page, "Transfer $32 from account 1234567890 to account 0987654321")
    expect(alice.page.locator(".approval-card .status-badge")).to_have_text("Pending", timeout=T)
    rid = alice.page.locator(".approval-card").get_attribute("data-approval-id")
    row = finn.page.locator(f'tr[data-approval-id="{rid}"]')
    expect(row).to_have_count(0)
    finn.page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # the tab is shown again
    expect(row).to_have_count(1, timeout=T)
    expect(finn.page.locator("body")).to_have_attribute("data-ws-state", "open")


def test_the_network_going_away_has_the_socket_asked_too(people):
    finn = people("finn")
    finn.page.add_init_script(QUICK % 60_000)
    sockets = Sockets(finn.page, r"/ws/inbox/")
    finn.page.goto("/inbox/")
    expect(finn.page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    assert len(sockets.routes) == 1
    sockets.silence()
    finn.page.evaluate("window.dispatchEvent(new Event('offline'))")
    for _ in range(T // 100):  # a second socket is opened once the first gave no answer
        if len(sockets.routes) == 2:
            break
        finn.page.wait_for_timeout(100)
    assert len(sockets.routes) == 2
    expect(finn.page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
