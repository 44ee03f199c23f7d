"""A person whose network drops: what they were doing stays on the page, what failed is said in
the page's words (not the browser's "Failed to fetch"), no script error, and it works once back."""

import re

import inbox_e2e
from chat_helpers import new_chat
from inbox_e2e import T, make_requests, statuses, tag, wait_status
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context; page errors fail the test

OFFLINE = "Could not reach the server: check your connection and try again."


def test_a_decision_from_the_list_while_offline(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Offline ({t})", "risk": "low"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    finn.ctx.set_offline(True)
    page.keyboard.press("j")  # the reading pane cannot load it
    expect(page.locator("#reading-pane")).to_contain_text(OFFLINE)
    page.keyboard.press("r")
    reason = page.locator("#decide-dialog-reason")
    reason.fill("Wrong account")
    page.locator("#decide-dialog-confirm").click()
    expect(page.locator("#decide-dialog-error")).to_have_text(OFFLINE)
    expect(reason).to_have_value("Wrong account")
    finn.ctx.set_offline(False)
    page.locator("#decide-dialog-confirm").click()
    expect(page.locator("#decide-dialog")).to_be_hidden()
    assert wait_status(live_stack, rid, "rejected") == "rejected"


def test_a_decision_on_the_request_page_while_offline(people, live_stack):
    """Approve on a request's page was a plain form POST: offline, the browser showed its own "No
    internet" page and the edited argument was gone. The page stays, with the edit and the feedback,
    says the decision was not sent, and sends it once the connection is back."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Offline page ({t})", "risk": "high",
                                        "timeout": 600}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    amount, feedback = page.locator("#arg__amount"), page.locator("#feedback")
    amount.fill("450")
    feedback.fill("Half now, half next week")
    finn.ctx.set_offline(True)
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()  # an edit: asked first
    expect(page.locator("#decide-not-sent")).to_have_text("Your decision was not sent. " + OFFLINE)
    assert page.url.endswith(f"/inbox/{rid}/")
    expect(amount).to_have_value("450")
    expect(feedback).to_have_value("Half now, half next week")
    finn.shoot("not-sent")
    finn.ctx.set_offline(False)
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_url(re.compile(r"held="), timeout=T)
    assert wait_status(live_stack, rid, "modified") == "modified"
    _status, said, final = statuses(live_stack, [rid])[rid]
    assert final["amount"] == 450 and said == "Half now, half next week"


def test_a_message_sent_while_offline_stays_in_the_composer(people):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    alice.ctx.set_offline(True)
    page.locator("#composer").fill("Am I still there?")
    page.locator("#composer").press("Enter")
    expect(page.locator("#chat-notice-text")).to_have_text("Could not send the message: " + OFFLINE)
    expect(page.locator("#composer")).to_have_value("Am I still there?")
    alice.ctx.set_offline(False)
    page.locator("#composer").press("Enter")
    expect(page.locator("#messages .msg-user .msg-body")).to_have_text("Am I still there?")


PROXY_502 = ("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center>"
             "<hr><center>nginx</center></body></html>")


def test_a_proxys_error_page_is_said_in_a_sentence(people):
    """A proxy in front of the server answered a message with its 502 HTML page: the chat showed
    that markup. It says in the page's words that the server answered with an error."""
    alice = people("alice")
    page = alice.page
    new_chat(page)
    page.route("**/api/threads/*/messages/", lambda route: route.fulfill(
        status=502, content_type="text/html", body=PROXY_502))
    page.locator("#composer").fill("Anyone there?")
    page.locator("#composer").press("Enter")
    expect(page.locator("#chat-notice-text")).to_have_text(
        "The server answered with an error page instead of a reply: try again in a moment.")
    expect(page.locator("#composer")).to_have_value("Anyone there?")


def test_an_undo_a_proxy_answered_with_its_error_page_says_so_in_a_sentence(people, live_stack):
    """The Undo on the list read the proxy's 502 page as JSON: the toast showed the parser's words
    and a piece of the markup ("Unexpected token '<', "<html><hea"... is not valid JSON")."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Undo 502 ({t})", "risk": "low"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    page.route("**/inbox/undo/", lambda route: route.fulfill(status=502, content_type="text/html", body=PROXY_502))
    page.keyboard.press("j")
    page.keyboard.press("a")  # low risk: held at once, with an Undo
    expect(page.locator("#undo-toast")).to_contain_text(f"Approved: Undo 502 ({t})")
    page.locator("#undo-button").click()
    expect(page.locator("#undo-toast .undo-error")).to_have_text(
        "The server answered with an error page instead of a reply: try again in a moment.")
    assert wait_status(live_stack, rid, "approved") == "approved"  # not undone: sent when the window closed
