"""A run no worker has started yet says so: the chat read "Banking assistant is answering…" for as
long as the deployment had no worker running (or every one was busy), while the run sat queued."""

from chat_helpers import T, frozen, new_chat, send
from playwright.sync_api import expect

WAITING = "Waiting to start: no worker of this service has taken the answer yet. It starts as soon as one does."


def test_a_run_no_worker_took_says_so_and_goes_on_when_one_does(people, live_stack):
    alice = people("alice")
    page = alice.page
    new_chat(page)
    status = page.locator("#run-status-text")
    with frozen(live_stack, "worker"):  # the worker takes nothing while stopped
        send(page, "What's the balance of account 1234567890?")
        expect(status).to_have_text("Banking assistant is answering…", timeout=T)
        expect(status).to_have_text(WAITING, timeout=T)
    # the worker comes back: the run starts and answers
    expect(page.locator(".msg-assistant .msg-body", has_text="1234567890 holds")).to_be_visible(timeout=T)
    expect(status).not_to_have_text(WAITING)

