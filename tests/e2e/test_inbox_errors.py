"""What went wrong is said to a person in a sentence of the page's language, never as a bare status
("The server answered 502.") or a parser's English ("Unexpected token ..."), and a decision sent
after the session ended is not taken for one made."""

import re

import inbox_e2e
from inbox_e2e import make_requests, statuses, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context; page errors fail the test

PROXY_502 = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
SERVER_DOWN = "The server could not answer just now: try again in a moment."
SIGNED_OUT = "You are signed out (the session ended): reload the page to sign in again."


def _lapse(session) -> None:
    """The session ends on the server's side (its cookie gone); the CSRF cookie stays, as it does."""
    kept = [c for c in session.ctx.cookies() if c["name"] != "sessionid"]
    session.ctx.clear_cookies()
    session.ctx.add_cookies(kept)


def _listed(people, live_stack, risk="low"):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Errors ({t})", "risk": risk}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open")
    page.keyboard.press("j")
    expect(page.locator("#preview")).to_be_visible()
    return finn, page, rid


def test_a_decision_a_proxy_refused_says_so_in_a_sentence(people, live_stack):
    """The list's reject dialog read "The server answered 502." over a proxy's error page."""
    _finn, page, rid = _listed(people, live_stack)
    page.route("**/inbox/bulk/", lambda route: route.fulfill(status=502, content_type="text/html", body=PROXY_502))
    page.keyboard.press("r")
    page.locator("#decide-dialog-reason").fill("Wrong account")
    page.locator("#decide-dialog-confirm").click()
    expect(page.locator("#decide-dialog-error")).to_have_text(SERVER_DOWN)
    assert statuses(live_stack, [rid])[rid][0] == "pending"


def test_a_decision_after_the_session_ended_is_not_taken_for_one(people, live_stack):
    """fetch followed the redirect to the sign-in page (200, HTML): the list took it for an answer
    that decided nothing and said so as if done; it says the session ended, and the row stays."""
    finn, page, rid = _listed(people, live_stack)
    _lapse(finn)
    page.keyboard.press("a")  # low risk: sent at once
    expect(page.locator("#decide-result")).to_have_text(SIGNED_OUT)
    expect(page.locator(f'tr[data-approval-id="{rid}"]')).to_be_visible()
    assert statuses(live_stack, [rid])[rid][0] == "pending"


def test_rules_that_are_not_json_are_said_in_a_sentence(people):
    """The rule builder showed the parser's English: "The JSON is not valid (Unexpected token ...)"."""
    page = people("admin").page
    page.goto("/policies/read_file/")
    page.locator("#conditions-details summary").click()
    page.locator("#p-conditions").fill('[{"name": "x",\n  "action" "gate"}]')
    page.get_by_role("button", name="Load this JSON into the builder").click()
    problem = page.locator("#rule-builder .field-error")
    expect(problem).to_have_text(re.compile(
        r"^This is not valid JSON near line 2, column \d+: check its quotes, commas and brackets\.$"))


def test_an_undo_refused_is_not_called_too_late(people, live_stack):
    """A refusal with the server's JSON sentence read "Too late to undo: the decision has been sent."
    while nothing had been sent yet; the toast now says the server's sentence and Undo stays."""
    _finn, page, _rid = _listed(people, live_stack)
    page.route("**/inbox/undo/", lambda route: route.fulfill(
        status=403, content_type="application/json", body='{"message": "You may not undo this decision."}'))
    page.keyboard.press("a")  # low risk: held at once, with an Undo
    expect(page.locator("#undo-toast")).to_be_visible()
    page.locator("#undo-button").click()
    expect(page.locator("#undo-toast .undo-error")).to_have_text("You may not undo this decision.")
    expect(page.locator("#decide-result", has_text="Too late")).to_have_count(0)
