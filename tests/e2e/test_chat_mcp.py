"""The notes agent in the chat: its MCP server asks to confirm during a call (elicitation), the
question is a card in the chat, the answer goes back to the server and the tool's result follows,
live, without a reload."""

import pytest
from chat_helpers import Session, T, close_sessions, manage_shell, new_chat, send
from conftest import DEMO_PASSWORD
from playwright.sync_api import expect


def sign_in(live_stack):
    """The login form, submitted from its password field (the page has other submit buttons)."""

    def do_login(page, username, password=DEMO_PASSWORD):
        page.goto(live_stack.url + "/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.locator("#id_password").press("Enter")
        page.wait_for_url(lambda url: "/accounts/login/" not in url, timeout=10_000)
        return page

    return do_login


@pytest.fixture
def alice(browser, live_stack, artifacts_dir, request):
    # the beat asks seed_demo's server for its tools within 10 s; asked here so the test need not wait
    healthy = manage_shell(live_stack, "from agents.mcp_servers import services; "
                                       "print(services.refresh_tools('notes').healthy)")
    assert healthy == "True"
    s = Session(browser, live_stack, sign_in(live_stack), "alice", artifacts_dir, prefix="mcp")
    yield s
    close_sessions(request, [s])


def test_the_servers_question_is_answered_in_the_chat(alice):
    page = alice.page
    new_chat(page, agent="notes")
    send(page, "Archive note 2")
    question = page.locator(".question-card")
    expect(question).to_contain_text(
        "Archive the note \u201cOrder a new laptop for Sam\u201d? (asked by the MCP server notes)", timeout=T)
    expect(question).to_contain_text("Notes (MCP server) asks")
    alice.shoot("asked")
    question.get_by_label("Confirm").select_option("true")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_contain_text("Your answer: Confirm: Yes", timeout=T)
    card = page.locator(".tool-card", has_text="notes__archive")
    expect(card.locator(".tool-result")).to_contain_text("Archived note 2.", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    alice.shoot("answered")
