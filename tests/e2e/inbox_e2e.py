"""Helpers for the inbox browser tests: data made in the live stack's own Django (its database,
Redis and channel layer, so the inbox WebSocket hears about it), and a signed-in reviewer."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from chat_helpers import Session, close_sessions, manage_shell  # noqa: F401  (re-exported for the tests)

T = 15_000  # ms: the longest any single expectation may wait

# Replaces window.Notification in a page: records what the inbox would show, permission granted.
FAKE_NOTIFICATION = """
window.__notes = [];
window.Notification = class {
  constructor(title, options) { window.__notes.push({title, body: (options || {}).body || ""}); }
  static get permission() { return "granted"; }
  static requestPermission() { return Promise.resolve("granted"); }
};
"""


def tag() -> str:
    """A word no other test's data contains: search for it to see only this test's rows."""
    return "t" + uuid.uuid4().hex[:10]


def make_requests(live_stack, specs: list[dict]) -> list[str]:
    """Create pending requests (tests/inbox_helpers.make_request keyword arguments) in one shell."""
    code = (
        "import json\n"
        "from tests.inbox_helpers import make_request\n"
        f"specs = json.loads({json.dumps(json.dumps(specs))})\n"
        "print(json.dumps([make_request(**s).pk for s in specs]))\n"
    )
    return json.loads(manage_shell(live_stack, code))


def run(live_stack, body: str) -> object:
    """Run Python in the live stack (tests.inbox_helpers and approvals.services imported); the
    value of `result` comes back through JSON."""
    code = (
        "import json\n"
        "from approvals import services\n"
        "from approvals.models import ApprovalRequest\n"
        "from tests.inbox_helpers import make_request, record_call, user\n"
        "result = None\n" + body + "\nprint(json.dumps(result, default=str))\n"
    )
    return json.loads(manage_shell(live_stack, code))


def statuses(live_stack, ids: list[str]) -> dict:
    return run(live_stack, f"result = {{r.pk: [r.status, r.feedback, r.final_arguments] for r in "
                           f"ApprovalRequest.objects.filter(pk__in={ids!r})}}")


def wait_status(live_stack, rid: str, wanted: str, timeout: float = 20.0) -> str:
    """The request's status once it is `wanted`, or what it is at the timeout: a decision made in
    the inbox pages is held for its undo window (AGUI_UNDO_SECONDS), then the server sends it."""
    deadline = time.monotonic() + timeout
    while True:
        status = statuses(live_stack, [rid])[rid][0]
        if status == wanted or time.monotonic() > deadline:
            return status
        time.sleep(0.3)


@pytest.fixture
def people(browser, live_stack, login, artifacts_dir, request):
    """people("finn") -> a signed-in Session (own browser context); page errors fail the test."""
    made = []

    def make(who, viewport=None, init_script=None):
        s = Session(browser, live_stack, login, who, artifacts_dir, prefix="inbox-" + request.node.name[5:],
                    viewport=viewport)
        if init_script:
            s.page.add_init_script(init_script)
        made.append(s)
        return s

    yield make
    close_sessions(request, made)


def lapse(session) -> None:
    """The session ends on the server's side (its cookie gone); the CSRF cookie stays, as it does."""
    kept = [c for c in session.ctx.cookies() if c["name"] != "sessionid"]
    session.ctx.clear_cookies()
    session.ctx.add_cookies(kept)


def sign_in_here(page, who, password="agui-demo") -> None:
    """The sign-in form the page was sent to, filled and sent."""
    page.fill("#id_username", who)
    page.fill("#id_password", password)
    page.click("main button[type=submit]")  # the sign-in form, not the header's language form
