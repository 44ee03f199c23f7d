"""Small helpers shared by the chat-page browser tests (no fixtures here: see conftest.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
T = 15_000  # ms: the longest any single expectation may wait
TOUCH = {"has_touch": True, "is_mobile": True}  # a browser context on a touch screen without keyboard or mouse


class Session:
    """One signed-in person in their own browser context; collects page errors and screenshots."""

    def __init__(self, browser, live_stack, login, who, artifacts_dir, prefix, viewport=None, **context_args):
        self.who, self.artifacts_dir, self.prefix = who, artifacts_dir, prefix
        self.ctx = browser.new_context(base_url=live_stack.url, viewport=viewport or {"width": 1280, "height": 900},
                                       **context_args)  # e.g. has_touch for a phone
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(T)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(f"{who}: {exc}"))
        self.shots = 0
        login(self.page, who)

    def shoot(self, step):
        self.shots += 1
        path = self.artifacts_dir / f"{self.prefix}-{self.shots:02d}-{step}-{self.who}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self, failed=False):
        if failed and self.page.url.startswith("http"):
            self.page.screenshot(path=str(self.artifacts_dir / f"FAILED-{self.prefix}-{self.who}.png"), full_page=True)
        self.ctx.close()


def close_sessions(request, sessions):
    """A fixture's teardown: each session closed (a picture of a failed test's pages), then the test
    fails on any JavaScript error its pages met."""
    rep = getattr(request.node, "rep_call", None)
    for s in sessions:
        s.close(failed=bool(rep and rep.failed))
    errors = [e for s in sessions for e in s.errors]
    assert not errors, f"JavaScript errors: {errors}"


@contextmanager
def frozen(live_stack, name):
    """SIGSTOP one process of the live stack for the block (SIGCONT after, whatever happens):
    what the test does meanwhile certainly happens while that process is mid-way."""
    child = next(c for c in live_stack.children if c.name == name)
    os.killpg(child.pgid, signal.SIGSTOP)
    try:
        yield child
    finally:
        os.killpg(child.pgid, signal.SIGCONT)


def new_chat(page, agent="banking"):
    """Start a chat from the picker; returns the new thread id once its socket is open."""
    page.goto("/chat/")
    page.get_by_label("Agent", exact=True).select_option(agent)
    page.get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/chat/[^/]+/$"), timeout=T)
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def send(page, text):
    page.locator("#composer").fill(text)
    page.locator("#composer").press("Enter")
    expect(page.locator("#composer")).to_have_value("")


def csrf_headers(page):
    token = next((c["value"] for c in page.context.cookies() if c["name"] == "csrftoken"), "")
    return {"X-CSRFToken": token, "Referer": page.url, "Content-Type": "application/json"}


def server_messages(page, thread_id):
    resp = page.request.get(f"/api/threads/{thread_id}/messages/")
    assert resp.ok, resp.text()
    return resp.json()


def dom_messages(page):
    """[(message id, role, text)] as the page shows them (tool results live inside their cards)."""
    return page.eval_on_selector_all(
        "#messages .msg",
        """els => els.map(e => [e.dataset.messageId || null,
                                e.classList.contains('msg-user') ? 'user' : 'assistant',
                                e.querySelector('.msg-body').textContent])""",
    )


def squash(text):
    return re.sub(r"\s+", "", text or "")


def assert_same_as_server(page, thread_id):
    """The page shows exactly the server's user and assistant messages, in order, once each."""
    server = [m for m in server_messages(page, thread_id) if m["role"] in ("user", "assistant")]
    shown = dom_messages(page)
    assert [m[0] for m in shown] == [m["id"] for m in server], (shown, server)
    assert [m[1] for m in shown] == [m["role"] for m in server]
    for (_, role, text), m in zip(shown, server, strict=True):
        # assistant text is Markdown: render the server's copy the way the page does
        expected = m["content"] if role == "user" else page.evaluate(
            "t => { const d = document.createElement('div'); d.appendChild(window.renderMarkdown(t));"
            " return d.textContent; }", m["content"])
        assert squash(text) == squash(expected), (text, m["content"])


def run_events(page, types):
    """The AG-UI events of the given types the page received, in order."""
    return page.evaluate("types => window.aguiChat.events.filter(e => types.includes(e.type))", list(types))


def manage_shell(live_stack, code):
    """Run Python in the live stack's Django (its database, Redis and Celery broker)."""
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=live_stack.env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def xadd_events(live_stack, thread_id, events):
    """Append AG-UI events to a thread's stream, as a worker would (what the socket relays)."""
    import redis

    client = redis.Redis.from_url(live_stack.env["REDIS_URL"])
    for event in events:
        event = {**event, "timestamp": int(time.time() * 1000)}
        client.xadd(f"agui:thread:{thread_id}", {"e": json.dumps(event)})
