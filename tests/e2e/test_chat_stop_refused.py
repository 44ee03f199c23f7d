"""A Stop the server could not carry out (503 redis_unavailable: Redis away) showed the bare
"The live connection (Redis) is unavailable right now. Please try again in a moment." — try what
again? The chat now says the Stop did not happen, and its button is there to press again."""

import json

import pytest
from chat_helpers import Session, T, close_sessions, new_chat, send
from playwright.sync_api import expect

REDIS_AWAY = {"message": "The live connection (Redis) is unavailable right now. Please try again in a moment.",
              "code": "redis_unavailable"}


@pytest.fixture
def alice(browser, live_stack, login, artifacts_dir, request):
    s = Session(browser, live_stack, login, "alice", artifacts_dir, prefix="stop-refused")
    yield s
    close_sessions(request, [s])


def test_a_withdraw_the_server_refused_says_it_did_not_happen(alice):
    page = alice.page
    new_chat(page)
    send(page, "Transfer $500 from account 1234567890 to account 0987654321")
    approval = page.locator(".tool-card", has_text="transfer_money").locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Pending", timeout=T)
    stop = page.locator("#stop")
    expect(stop).to_have_text("Withdraw")
    page.route("**/api/runs/*/cancel/", lambda route: route.fulfill(
        status=503, content_type="application/json", headers={"Retry-After": "1"}, body=json.dumps(REDIS_AWAY)))
    stop.click()
    expect(page.locator("#chat-notice-text")).to_have_text(
        "Could not withdraw the waiting request: " + REDIS_AWAY["message"], timeout=T)
    expect(stop).to_have_text("Withdraw")
    expect(stop).to_be_enabled()
    expect(approval.locator(".status-badge")).to_have_text("Pending")
    alice.shoot("withdraw-refused")
