"""The support workflow in the chat: the step trail, a question answered in its card, a refund the
support group (rita) approves in the inbox, the case completed — all live, without a reload."""

import re

from chat_helpers import T, assert_same_as_server, new_chat, send
from playwright.sync_api import expect


def test_refund_workflow_question_approval_and_completion(people):
    alice, rita = people("alice"), people("rita")
    page = alice.page
    thread = new_chat(page, agent="support")
    send(page, "My coffee grinder stopped working after a week. I'd like a refund.")

    question = page.locator(".question-card")
    expect(question).to_contain_text("Refunds asks", timeout=T)
    expect(question).to_contain_text("What is the number of the order you want refunded?")
    expect(page.locator("#step-trail")).to_contain_text("Triage")
    expect(page.locator("#step-trail")).to_contain_text("Refunds")
    alice.shoot("asked")
    # a wrong answer is refused in words (the pattern read out, never the regex); the right one
    # continues the workflow
    field = question.get_by_label("Order number")
    expect(question).to_contain_text("4 to 12 digits")
    field.fill("my grinder")
    question.get_by_role("button", name="Answer").click()
    expect(question.locator(".approval-error")).to_have_text("Order number: enter 4 to 12 digits.", timeout=T)
    expect(page.locator("body")).not_to_contain_text("responseSchema")
    expect(page.locator("body")).not_to_contain_text("\\d{4,12}")
    field.fill("12346")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_contain_text("Your answer: Order number: 12346", timeout=T)

    card = page.locator(".tool-card", has_text="submit_refund")
    approval = card.locator(".approval-card")
    expect(approval).to_be_visible(timeout=T)
    expect(approval).to_contain_text("support")
    alice.shoot("awaiting-support")

    rita.page.goto("/inbox/")
    rita.page.locator("a", has_text="Refund 59.00 on order 12346").first.click()
    rita.page.wait_for_url(re.compile(r"/inbox/[^/]+/$"), timeout=T)
    rita.page.locator("#approve").click()
    rita.page.wait_for_url(re.compile(r"held="), timeout=T)  # on to the next request, with an Undo

    expect(card.locator(".tool-result")).to_contain_text("Refund of 59.00 USD", timeout=T)
    expect(page.locator(".msg-assistant .msg-body", has_text="Case complete.").last).to_be_visible(timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    assert_same_as_server(page, thread)
    alice.shoot("completed")
