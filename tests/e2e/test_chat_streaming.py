"""The chat page's live stream: text that grows, a socket closed mid-run, Stop, RUN_ERROR with Retry,
workflow steps, and model output that tries to inject HTML.

The offline scripted model plays demo prompts (agents/llm/scripted/chat.py): "Tell me a long story" streams a
paced reply (about 7 s), "Show me some raw HTML" answers with <script>, <img onerror> and a
javascript: link, "Simulate a model outage" fails the way an unreachable model does.
"""

import re

import pytest
from chat_helpers import (
    Session,
    T,
    assert_same_as_server,
    frozen,
    new_chat,
    run_events,
    send,
    server_messages,
    squash,
    xadd_events,
)
from playwright.sync_api import expect

STREAMING_LENGTH = """n => {
    const msgs = document.querySelectorAll('#messages .msg-assistant');
    const m = msgs[msgs.length - 1];
    return !!m && m.classList.contains('streaming') && m.querySelector('.msg-body').textContent.length >= n;
}"""

# Records the length of the streaming reply at every change of the message list.
WATCH_REPLY = """() => {
    window.__replySeen = [];
    new MutationObserver(() => {
        const m = document.querySelector('#messages .msg-assistant.streaming .msg-body');
        const n = m ? m.textContent.length : 0;
        if (n && n !== window.__replySeen[window.__replySeen.length - 1]) window.__replySeen.push(n);
    }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture
def alice(browser, live_stack, login, artifacts_dir, request):
    s = Session(browser, live_stack, login, "alice", artifacts_dir, prefix=request.node.name.replace("test_", ""))
    yield s
    failed = getattr(request.node, "rep_call", None)
    s.close(failed=bool(failed and failed.failed))
    assert not s.errors, f"JavaScript errors: {s.errors}"


def test_streaming_text_grows(alice, live_stack):
    page = alice.page
    thread = new_chat(page)
    page.evaluate(WATCH_REPLY)
    send(page, "Tell me a long story")
    page.wait_for_function(STREAMING_LENGTH, arg=20, timeout=T)
    with frozen(live_stack, "worker"):  # mid-story for as long as the checks take
        expect(page.locator("#stop")).to_be_visible()  # while the run streams
        alice.shoot("streaming")
    expect(page.locator("#messages .msg-assistant.streaming")).to_have_count(0, timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    final = page.locator("#messages .msg-assistant .msg-body").last.text_content()
    assert final.endswith("The end.")
    # What the page showed while the reply streamed, change by change (recorded, not sampled: a
    # slow machine cannot make this test miss a moment): many lengths, only ever growing.
    grew = page.evaluate("window.__replySeen")
    assert len(grew) >= 10 and grew == sorted(grew) and grew[0] < grew[-1], (grew, len(final))
    assert len(run_events(page, ["TEXT_MESSAGE_CONTENT"])) >= 10  # many deltas, not one blob
    expect(page.locator("#stop")).to_be_hidden()
    assert_same_as_server(page, thread)
    alice.shoot("finished")


def test_socket_closed_mid_run_recovers_same_messages_as_server(alice, live_stack):
    page = alice.page
    thread = new_chat(page)
    send(page, "Tell me a long story")
    page.wait_for_function(STREAMING_LENGTH, arg=100, timeout=T)

    # The worker is frozen (SIGSTOP) while the socket is away, so the run is certainly still going
    # when the new socket connects, however slow the machine: the drop is mid-run by construction.
    with frozen(live_stack, "worker"):
        shown = len(page.locator("#messages .msg-assistant .msg-body").last.text_content())
        before = page.evaluate("window.aguiChat.events.length")
        alice.shoot("before-close")
        page.evaluate("window.aguiChat.ws.close()")
        page.wait_for_function("() => window.aguiChat.connects >= 2 && document.body.dataset.wsState === 'open'",
                               timeout=T)
        # The new socket resumed where the old one stopped (?after=, the last frame's position): the
        # half-told story stays on the page, still streaming, and nothing is sent again.
        page.wait_for_function(STREAMING_LENGTH, arg=shown, timeout=T)
        expect(page.locator("#messages .msg-assistant.streaming")).to_have_count(1)
        alice.shoot("reconnected-mid-run")

    # The worker goes on: the rest of the story reaches the new socket, each event once.
    expect(page.locator("#messages .msg-assistant.streaming")).to_have_count(0, timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    after = page.evaluate("n => window.aguiChat.events.slice(n).map(e => e.type)", before)
    # before, a reconnect was the snapshots and the run replayed from its RUN_STARTED: all of it twice
    assert "MESSAGES_SNAPSHOT" not in after and "RUN_STARTED" not in after and "TEXT_MESSAGE_START" not in after, after
    assert "TEXT_MESSAGE_CONTENT" in after and after[-1] == "RUN_FINISHED", after
    story = "".join(e["delta"] for e in run_events(page, ["TEXT_MESSAGE_CONTENT"]))
    assert story.endswith("The end.") and story.count("The end.") == 1
    # Exactly the server's messages, each once, with the whole reply.
    assert_same_as_server(page, thread)
    assert [m["role"] for m in server_messages(page, thread)] == ["user", "assistant"]
    assert squash(story) == squash(server_messages(page, thread)[-1]["content"])  # every delta once, in order
    expect(page.locator("#messages .msg-assistant .msg-body")).to_have_count(1)
    expect(page.locator("#messages .msg-assistant .msg-body")).to_contain_text("The end.")
    alice.shoot("recovered")

    # A second drop after the run: the new socket resumes too, and the page stays the server's.
    page.evaluate("window.aguiChat.ws.close()")
    page.wait_for_function("() => window.aguiChat.connects >= 3 && document.body.dataset.wsState === 'open'",
                           timeout=T)
    assert_same_as_server(page, thread)
    # A socket closed for a Redis outage (4011) is not resumed: what the outage kept off the stream
    # (a notice) is only in the database, so the next socket starts over with the snapshots.
    seen = page.evaluate("window.aguiChat.events.length")
    page.evaluate("""() => { const ws = window.aguiChat.ws;
        ws.dispatchEvent(new CloseEvent('close', {code: 4011})); ws.close(); }""")
    page.wait_for_function("n => window.aguiChat.events.slice(n).some(e => e.type === 'MESSAGES_SNAPSHOT')",
                           arg=seen, timeout=T)
    assert_same_as_server(page, thread)
    expect(page.locator("#chat-notice")).to_be_hidden()  # the outage's notice went with the next socket's snapshot
    # A reload has no position: the snapshots rebuild the same page.
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    assert_same_as_server(page, thread)


def test_stop_cancels_and_the_thread_stays_usable(alice, live_stack):
    page = alice.page
    thread = new_chat(page)
    send(page, "Tell me a long story")
    page.wait_for_function(STREAMING_LENGTH, arg=80, timeout=T)
    stop = page.get_by_role("button", name="Stop")
    # Frozen worker: Stop lands mid-story however slow the machine (the story lasts about 7 s).
    with frozen(live_stack, "worker"):
        expect(stop).to_be_visible()
        expect(page.locator("#send")).to_be_disabled()
        with page.expect_response(lambda r: r.url.endswith("/cancel/")) as cancelled:
            stop.click()
        assert cancelled.value.status == 202

    expect(page.locator("#run-status")).to_contain_text("You stopped the answer.", timeout=T)
    expect(stop).to_be_hidden()
    finished = run_events(page, ["RUN_FINISHED"])
    assert finished[-1]["outcome"] == {"type": "cancelled"}
    run_id = run_events(page, ["RUN_STARTED"])[-1]["runId"]
    assert page.request.get(f"/api/runs/{run_id}/").json()["status"] == "cancelled"
    partial = page.locator("#messages .msg-assistant .msg-body").last.text_content()
    assert partial and "The end." not in partial  # it stopped part-way
    expect(page.locator("#messages .msg-assistant.streaming")).to_have_count(0)
    assert_same_as_server(page, thread)  # the partial reply is kept, once
    alice.shoot("cancelled")

    # The thread takes the next message.
    expect(page.locator("#composer")).to_be_enabled()
    send(page, "What's the balance of account 1234567890?")
    expect(page.locator(".tool-card", has_text="check_balance").locator(".tool-result")).to_contain_text(
        "1234567890 holds", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)
    assert_same_as_server(page, thread)
    alice.shoot("usable-again")


def test_run_error_banner_and_retry(alice):
    page = alice.page
    thread = new_chat(page)
    send(page, "Simulate a model outage")
    banner = page.locator("#run-error")
    expect(banner).to_be_visible(timeout=T)
    expect(banner).to_contain_text("could not be reached")
    expect(page.locator("#run-status")).to_be_hidden()
    expect(page.locator("#composer")).to_be_enabled()
    alice.shoot("error")

    first_run = run_events(page, ["RUN_STARTED"])[-1]["runId"]
    page.get_by_role("button", name="Retry").click()
    # Retry runs the failed turn again (a new run on the same history), which fails again here.
    page.wait_for_function("() => window.aguiChat.events.filter(e => e.type === 'RUN_ERROR').length === 2",
                           timeout=T)
    runs = [e["runId"] for e in run_events(page, ["RUN_STARTED"])]
    assert len(set(runs)) == 2 and runs[0] == first_run
    expect(banner).to_be_visible()
    assert page.request.get(f"/api/runs/{runs[1]}/").json()["status"] == "failed"
    # No second copy of the user's message, on the page or on the server.
    expect(page.locator("#messages .msg-user")).to_have_count(1)
    assert [m["role"] for m in server_messages(page, thread)] == ["user"]
    alice.shoot("retried")

    # A reload: the RUN_ERROR is history now, the snapshot still says the latest run failed.
    page.reload()
    expect(banner).to_be_visible(timeout=T)
    expect(banner).to_contain_text("could not be reached")
    page.wait_for_function("() => window.aguiChat.events.some(e => e.name === 'run_error')", timeout=T)
    assert not run_events(page, ["RUN_ERROR"])
    page.get_by_role("button", name="Retry").click()  # retries the run named by the snapshot
    page.wait_for_function("() => window.aguiChat.events.filter(e => e.type === 'RUN_ERROR').length === 1",
                           timeout=T)
    third = run_events(page, ["RUN_STARTED"])[-1]["runId"]
    assert third not in runs and page.request.get(f"/api/runs/{third}/").json()["status"] == "failed"
    expect(page.locator("#messages .msg-user")).to_have_count(1)


def test_step_indicator_follows_step_events(alice, live_stack):
    """Workflows emit STEP_STARTED / STEP_FINISHED (stepName = agent); appended here as a worker would."""
    page = alice.page
    thread = new_chat(page)
    trail = page.locator("#step-trail")
    expect(trail).to_be_hidden()

    xadd_events(live_stack, thread, [
        {"type": "RUN_STARTED", "threadId": thread, "runId": "wf-run-1"},
        {"type": "STEP_STARTED", "stepName": "triage_agent"},
    ])
    expect(trail).to_be_visible(timeout=T)
    expect(trail.locator('[aria-current="step"] .step-name')).to_have_text("Triage")
    expect(page.locator("#run-status")).to_contain_text("Triage is working")

    xadd_events(live_stack, thread, [
        {"type": "STEP_FINISHED", "stepName": "triage_agent"},
        {"type": "STEP_STARTED", "stepName": "refund_agent"},
    ])
    expect(trail).to_have_text("Triage → Refunds", timeout=T)
    expect(trail.locator('[aria-current="step"] .step-name')).to_have_text("Refunds")
    expect(trail.locator(".step-done .step-name")).to_have_text("Triage")
    alice.shoot("steps")

    xadd_events(live_stack, thread, [
        {"type": "STEP_FINISHED", "stepName": "refund_agent"},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": "wf-run-1"},
        # a continuation extends the same path
        {"type": "RUN_STARTED", "threadId": thread, "runId": "wf-run-2", "parentRunId": "wf-run-1"},
        {"type": "STEP_STARTED", "stepName": "order_agent"},
    ])
    expect(trail).to_have_text("Triage → Refunds → Orders", timeout=T)
    xadd_events(live_stack, thread, [
        {"type": "STEP_FINISHED", "stepName": "order_agent"},
        {"type": "CUSTOM", "name": "status", "value": {"state": "completed"}},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": "wf-run-2"},
    ])
    # the case is closed, and the trail says so
    expect(trail).to_have_text("Triage → Refunds → Orders → Case closed", timeout=T)
    expect(trail.locator('[aria-current="step"]')).to_have_count(0, timeout=T)
    expect(page.locator("#run-status")).to_be_hidden()

    # A new turn (no parentRunId) after a closed case starts a new path.
    xadd_events(live_stack, thread, [
        {"type": "RUN_STARTED", "threadId": thread, "runId": "wf-run-3"},
        {"type": "STEP_STARTED", "stepName": "triage_agent"},
        {"type": "STEP_FINISHED", "stepName": "triage_agent"},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": "wf-run-3"},
    ])
    expect(trail).to_have_text("Triage", timeout=T)
    alice.shoot("new-turn")


def test_markdown_script_in_a_reply_renders_inert(alice):
    page = alice.page
    new_chat(page)
    send(page, "Show me some raw HTML")
    body = page.locator("#messages .msg-assistant .msg-body").last
    expect(body).to_contain_text("that must stay text", timeout=T)
    expect(page.locator("#run-status")).to_be_hidden(timeout=T)

    def check():
        expect(body).to_contain_text("<script>window.aguiPwned = true;")
        expect(body).to_contain_text('<img src="x" onerror="window.aguiPwned = true">')
        expect(body).to_contain_text('<b onclick="window.aguiPwned=true">bold tag</b>')
        assert body.locator("script, img, iframe, b, [onerror], [onclick]").count() == 0
        expect(body.locator("strong")).to_have_text("bold")
        expect(body.locator("em")).to_have_text("italic")
        link = body.locator("a", has_text="safe link")
        expect(link).to_have_attribute("href", "https://example.com/docs")
        expect(link).to_have_attribute("rel", "noopener nofollow")
        assert body.locator('a[href^="javascript"]').count() == 0
        expect(body).to_contain_text("a javascript link")
        assert page.evaluate("window.aguiPwned") is None
        assert "pwned" not in page.title()

    check()
    alice.shoot("inert")
    page.reload()  # the same text through the snapshot path
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    body = page.locator("#messages .msg-assistant .msg-body").last
    check()


def test_a_socket_closed_for_an_outage_says_so_until_it_is_back(alice):
    """With Redis down the thread socket closes with 4011 (the chat's message is still stored and
    answered later): the page said only "Reconnecting…" in a corner, for as long as it lasted."""
    page = alice.page
    new_chat(page)
    outage = {"on": True}

    def socket(ws):  # the server's answer during the outage: accepted, then closed with 4011
        if outage["on"]:
            ws.close(code=4011, reason="Redis away")
        else:
            ws.connect_to_server()

    page.route_web_socket(re.compile(r"/ws/threads/"), socket)
    page.evaluate("window.aguiChat.ws.close()")
    expect(page.locator("#chat-notice-text")).to_have_text(
        "The service is temporarily unavailable. What you send is kept and answered once it is back.", timeout=T)
    alice.shoot("outage")
    outage["on"] = False  # Redis is back: the next socket gets the snapshots, and the notice goes
    page.wait_for_function("() => document.body.dataset.wsState === 'open'", timeout=30_000)
    expect(page.locator("#chat-notice")).to_be_hidden(timeout=T)
