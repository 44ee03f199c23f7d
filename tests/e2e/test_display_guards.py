"""What a reviewer or an end user reads is what there is, in the box it belongs to: a long unbroken
value wraps instead of widening the page, text-direction controls in arguments are shown, not obeyed,
the chat says why a message was refused, and approval badges speak to people, not to the model."""


import inbox_e2e
from chat_helpers import T, new_chat
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

VIEWPORT = 1280


def test_a_message_over_the_limit_says_why(people):
    """The composer holds the server's limit; a longer message (an old page, a script) is refused with
    the field's sentence, not the summary "invalid input", and stays in the composer."""
    alice = people("alice")
    page = alice.page
    new_chat(page, "banking")
    limit = int(page.locator("#composer").get_attribute("maxlength"))
    assert limit == 20000
    page.locator("#composer").fill("z" * (limit + 50))
    assert len(page.locator("#composer").input_value()) == limit  # the browser stops at the limit
    page.evaluate("document.getElementById('composer').removeAttribute('maxlength')")
    page.locator("#composer").fill("z" * (limit + 1))
    page.locator("#send").click()
    expect(page.locator("#chat-notice-text")).to_have_text(
        f"Ensure this field has no more than {limit} characters.", timeout=T)
    assert len(page.locator("#composer").input_value()) == limit + 1
