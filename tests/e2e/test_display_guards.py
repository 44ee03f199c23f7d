"""What a reviewer or an end user reads is what there is, in the box it belongs to: a long unbroken
value wraps instead of widening the page, text-direction controls in arguments are shown, not obeyed,
the chat says why a message was refused, and approval badges speak to people, not to the model."""


import json
import re

import inbox_e2e
from chat_helpers import T, new_chat, send
from inbox_e2e import make_requests
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

VIEWPORT = 1280


def test_a_message_over_the_limit_says_why(people):
    """The composer says when a message is over the server's limit (test_chat_limits); a longer message
    sent all the same (an old page, a script: here a page without the composer's limit) is refused with
    the field's sentence, not the summary "invalid input", and stays in the composer."""
    alice = people("alice")
    page = alice.page

    # the composer's limit taken away before the page's script reads it (the parser runs pending
    # microtasks, this observer's too, before it runs a script): a page without the check
    page.add_init_script("""new MutationObserver((_, seen) => {
        const composer = document.getElementById('composer');
        if (composer) { composer.dataset.maxChars = '0'; seen.disconnect(); }
    }).observe(document, {childList: true, subtree: true});""")
    new_chat(page, "banking")
    limit = 20000  # AGUI_MAX_MESSAGE_CHARS, the live stack's default
    page.locator("#composer").fill("z" * (limit + 1))
    page.locator("#send").click()
    expect(page.locator("#chat-notice-text")).to_have_text(
        f"Ensure this field has no more than {limit} characters.", timeout=T)
    assert len(page.locator("#composer").input_value()) == limit + 1


def test_what_a_field_cut_from_a_paste_is_said(people, live_stack):
    """50,000 characters pasted into the composer became its 20,000 without a word, and a
    reviewer's long feedback its 5,000: each field now says what it left out, until it fits."""
    big = ("lorem ipsum dolor sit amet " * 2000)[:50_000]
    alice = people("alice")
    page = alice.page
    new_chat(page, "banking")
    composer = page.locator("#composer")
    composer.focus()
    page.keyboard.insert_text(big)
    # the composer cuts nothing (its limit is the server's count, not a maxlength): it says how much is over
    assert len(composer.input_value()) == 50_000
    note = page.locator("#composer-note")
    expect(note).to_have_text(
        "Too long to send: a message may have 20,000 characters. Shorten it by 30,000 characters.")
    expect(composer).to_have_attribute("aria-describedby", re.compile(r"\bcomposer-note\b"))
    composer.press("Control+a")
    composer.press("Backspace")
    expect(note).to_have_text("")
    page.keyboard.insert_text("short")  # what fits says nothing
    expect(note).to_have_text("")

    [rid] = make_requests(live_stack, [{"requester": "alice", "description": "Long feedback"}])
    finn = people("finn").page
    finn.goto(f"/inbox/{rid}/")
    finn.locator("#feedback").focus()
    finn.keyboard.insert_text(big)
    expect(finn.locator("#feedback-limit")).to_have_text(
        "Only the first 5000 characters fit here: the rest of what you put in was left out.")
    finn.keyboard.press("Backspace")
    expect(finn.locator("#feedback-limit")).to_be_hidden()
    finn.keyboard.insert_text("a")  # fits: the field is full now
    expect(finn.locator("#feedback-limit")).to_be_hidden()
    finn.keyboard.insert_text("b")  # a full field takes nothing, and no input event says so
    expect(finn.locator("#feedback-limit")).to_be_visible()


LONG = "https://example.com/" + "a" * 3000


def _fits(page, selector=None):
    """The page does not scroll sideways; `selector`'s box holds its own text."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"the page is {width}px wide"
    if selector:
        inner, outer = page.evaluate("s => { const e = document.querySelector(s); return [e.scrollWidth, e.clientWidth]; }",
                                     selector)
        assert inner <= outer, f"{selector}: {inner}px of text in a {outer}px box"


def test_a_long_unbroken_value_wraps_in_its_box(people):
    """A 3,000-character URL in an email body: the chat card, the inbox preview, the request page while
    editing (diff preview) and once decided (final diff), and the chat's "rita changed this" diff."""
    alice, rita = people("alice"), people("rita")
    page = alice.page
    new_chat(page, "ops")
    send(page, f"Email bob@example.com subject 'Long' saying '{LONG}'")
    card = page.locator(".tool-card", has_text="send_email").last
    expect(card.locator(".approval-card")).to_be_visible(timeout=T)
    _fits(page, "#messages .tool-card .tool-args")

    r = rita.page
    r.goto("/inbox/")
    expect(r.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    row = r.locator("#approval-rows tr[data-tool=send_email]").first
    row.locator("td.col-risk").click()
    expect(r.locator("#reading-pane .preview-title")).to_be_visible(timeout=T)
    expect(r.locator("#reading-pane pre.code-block")).to_contain_text("aaaa", timeout=T)
    _fits(r, "#reading-pane pre.code-block")
    href = row.locator("a.row-link").get_attribute("href")
    r.goto(href)
    _fits(r, "#approval-detail")
    r.get_by_role("button", name="JSON").click()
    edited = json.loads(r.locator("#arguments-json").input_value())
    edited["body"] = LONG + "b"
    r.locator("#arguments-json").fill(json.dumps(edited))
    expect(r.locator("#diff-preview")).to_contain_text("Message:")
    _fits(r, "#diff-preview")
    r.locator("#approve").click()
    if r.locator("#decide-dialog").is_visible():
        _fits(r, "#decide-dialog-list")
        r.locator("#decide-dialog-confirm").click()
    expect(card.locator(".approval-diff")).to_be_visible(timeout=30_000)  # after rita's undo window
    _fits(page, "#messages .approval-diff")
    _fits(page, "#messages .approval-card")
    r.goto(href)
    expect(r.locator("#final-diff li")).to_have_count(1, timeout=T)
    _fits(r, "#final-diff")


SPOOF = "Invoice \u202efdp.exe"


def test_text_direction_controls_are_shown_not_obeyed(people, live_stack):
    """A subject with U+202E reads "Invoice ⟨U+202E⟩fdp.exe" in the title, the arguments, the reading pane,
    the form editor's note and the JSON editor (as \\u202e), and in the chat's card."""
    [rid] = make_requests(live_stack, [{
        "requester": "alice", "tool": "send_email", "agent": "ops", "group": "reviewers",
        "description": f"Email frank: {SPOOF}",
        "arguments": {"to": "frank@example.com", "subject": SPOOF, "body": "see attachment"}}])
    r = people("rita").page
    r.goto(f"/inbox/{rid}/")
    shown = "Invoice ⟨U+202E⟩fdp.exe"
    expect(r.locator(".detail-title")).to_have_text(f"Email frank: {shown}")
    expect(r.locator(".detail-title .bidi-control")).to_have_text("⟨U+202E⟩")
    r.locator("details.args-raw summary").click()
    expect(r.locator("#requested-arguments")).to_contain_text(f'"subject": "{shown}",')
    assert "\u202e" not in r.locator("#requested-arguments").inner_text()
    expect(r.locator("#arg__subject-bidi")).to_contain_text(shown)  # the form's subject field
    r.get_by_role("button", name="JSON").click()
    expect(r.locator("#arguments-json")).to_have_value(re.compile(r'"subject": "Invoice \\u202efdp\.exe"'))
    html = r.content()
    assert "\u202e" not in html.split('<script id="approval-arguments"')[0]
    # live: a diff drawn by the page's script
    raw = r.locator("#arguments-json")
    raw.fill(raw.input_value().replace("see attachment", "see \u202eattachment"))
    expect(r.locator("#diff-preview")).to_contain_text("see ⟨U+202E⟩attachment")


TAGGED = "Hello" + "".join(chr(0xE0000 + ord(c)) for c in "wire")  # tag characters: ASCII drawn as nothing


def test_text_hidden_in_tag_characters_is_shown_live_too(people, live_stack):
    """Tags (U+E0000-E007F) spell text nobody sees: the page's script writes them out as the server
    does, in the form editor's note, the JSON editor (as their escapes) and a live diff."""
    [rid] = make_requests(live_stack, [{
        "requester": "alice", "tool": "send_email", "agent": "ops", "group": "reviewers",
        "arguments": {"to": "frank@example.com", "subject": "Status", "body": TAGGED}}])
    r = people("rita").page
    r.goto(f"/inbox/{rid}/")
    shown = "Hello⟨U+E0077⟩⟨U+E0069⟩⟨U+E0072⟩⟨U+E0065⟩"
    expect(r.locator("#arg__body-bidi")).to_contain_text(shown)
    r.get_by_role("button", name="JSON").click()
    expect(r.locator("#arguments-json")).to_have_value(re.compile(r'"body": "Hello\\udb40\\udc77\\udb40\\udc69'))
    raw = r.locator("#arguments-json")
    raw.fill(raw.input_value().replace('"Status"', '"Status ' + chr(0xE0041) + '"'))
    expect(r.locator("#diff-preview")).to_contain_text("Status ⟨U+E0041⟩")
    assert chr(0xE0077) not in r.locator("#approval-detail").inner_text()


def test_the_chat_card_shows_the_arguments_that_run(people):
    """The requester's card showed the model's streamed text ("bob@EXAMPLE.COM") under a title and an
    inbox that read the address the mail goes to: it shows the arguments as validated, as the inbox does."""
    page = people("alice").page
    new_chat(page, "ops")
    send(page, "Email bob@EXAMPLE.COM subject 'Status' saying 'All good'")
    card = page.locator(".tool-card", has_text="send_email").last
    expect(card.locator(".approval-card")).to_be_visible(timeout=T)
    expect(card.locator(".tool-args")).to_contain_text('"to": "bob@example.com"')
    assert "EXAMPLE" not in card.locator(".tool-args").inner_text()
    page.reload()  # the snapshot's calls do not write the streamed text back over them
    card = page.locator(".tool-card", has_text="send_email").last
    expect(card.locator(".approval-card")).to_be_visible(timeout=T)
    expect(card.locator(".tool-args")).to_contain_text('"to": "bob@example.com"')
    assert "EXAMPLE" not in card.locator(".tool-args").inner_text()
