"""The security matrix (issue 9): every URL and WebSocket route x every kind of caller -> the
expected answer. Plus CSRF on forms, WebSocket origin checks, no secrets in logs, and the cookie
flags of a production configuration.

Callers: anonymous; alice (end user, owns the thread and asked for the requests); bob (another
end user); rita (a reviewer, but not of finance); finn (finance: decides transfers); admin.
A route added to the project without a row here fails test_every_route_has_a_row.
"""

import json
import logging
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from agents import services
from agents.models import Run
from approvals import mail_links, policy
from approvals import services as approval_services
from approvals.models import AuditEvent, ThreadGrant
from webhooks.models import WebhookDelivery, WebhookEndpoint

ROLES = ["anon", "alice", "bob", "rita", "finn", "admin"]
ROOT = Path(__file__).resolve().parents[2]


def by_role(default=None, **codes):
    """Expected status per role; `default` for every signed-in role not named."""
    out = {role: codes.get(role, default) for role in ROLES}
    missing = [r for r, v in out.items() if v is None]
    assert not missing, f"no expectation for {missing}"
    return out


def owner_only(ok, anon=401, other=404):
    return by_role(other, anon=anon, alice=ok)


@dataclass
class Row:
    name: str
    method: str
    path: str  # {thread} {run} {fin} {req} {audit} {grant} {hook} {delivery} are filled from the fixture's objects
    auth: str  # "session" (pages) or "token" (API, AG-UI)
    expect: dict
    body: dict | None = None
    location: dict = field(default_factory=dict)  # role -> where a redirect must point
    after: object = None  # after(world, role): what must (not) have changed
    # AG-UI: a refusal after authentication comes in-stream (200, RUN_STARTED + RUN_ERROR code)
    stream_error: dict = field(default_factory=dict)  # role -> the RUN_ERROR's code


PAGE = dict(auth="session")
# what the detail page's form posts: the action and every argument field
APPROVE_FORM = {"action": "approve", "arg__from_account": "1234567890", "arg__to_account": "0987654321",
                "arg__amount": "5.0", "arg__currency": "USD"}
API = dict(auth="token")
LOGIN = "/accounts/login/"

ROWS = [
    # --- pages (session) ---
    Row("home", "GET", "/", expect=by_role(302, anon=302), **PAGE,
        location={"anon": LOGIN, "alice": "/chat/", "bob": "/chat/", "rita": "/inbox/", "finn": "/inbox/",
                  "admin": "/inbox/"}),
    Row("healthz (public probe)", "GET", "/healthz", expect=by_role({200, 503}, anon={200, 503}), **PAGE),
    Row("login page", "GET", LOGIN, expect=by_role(200, anon=200), **PAGE),
    Row("logout", "POST", "/accounts/logout/", expect=by_role(302, anon=302), **PAGE),
    Row("chat list", "GET", "/chat/", expect=by_role(200, anon=302), **PAGE, location={"anon": LOGIN}),
    Row("chat thread", "GET", "/chat/{thread}/", expect=owner_only(200, anon=302), **PAGE),
    Row("inbox", "GET", "/inbox/", expect=by_role(200, anon=302, alice=403, bob=403), **PAGE),
    Row("inbox detail (finance)", "GET", "/inbox/{fin}/",
        expect=by_role(200, anon=302, alice=403, bob=403, rita=404), **PAGE),
    # admin sees every request but is not in finance: the form refuses the decision
    Row("inbox decide form (finance)", "POST", "/inbox/{fin}/", body=APPROVE_FORM,
        expect=by_role(302, anon=302, alice=403, bob=403, rita=404, admin=400), **PAGE),
    Row("inbox detail (requester-routed)", "GET", "/inbox/{req}/",
        expect=by_role(404, anon=302, alice=403, bob=403, admin=200), **PAGE),
    # the conversation behind a request: only who may decide it (and admins)
    Row("request conversation (finance)", "GET", "/inbox/{fin}/conversation/",
        expect=by_role(200, anon=302, alice=403, bob=403, rita=404), **PAGE),
    Row("request conversation (requester-routed)", "GET", "/inbox/{req}/conversation/",
        expect=by_role(404, anon=302, alice=403, bob=403, admin=200), **PAGE),
    # recalls only the caller's own held decisions (approvals/services.undo); nothing held here
    Row("inbox undo", "POST", "/inbox/undo/", body={"held": ""}, expect=by_role(302, anon=302, alice=403, bob=403),
        **PAGE),
    Row("inbox stats", "GET", "/inbox/stats/", expect=by_role(200, anon=302, alice=403, bob=403), **PAGE),
    Row("inbox summary", "GET", "/inbox/summary/", expect=by_role(200, anon=302, alice=403, bob=403), **PAGE),
    # reviewers are sent back to the list either way; only finn's decision may land
    Row("inbox bulk decide", "POST", "/inbox/bulk/", body={"ids": "{fin}", "decision": "approve"},
        expect=by_role(302, anon=302, alice=403, bob=403), after=lambda w, role: _only_finn_decided(w, role), **PAGE),
    Row("mail settings", "GET", "/inbox/settings/", expect=by_role(200, anon=302), **PAGE, location={"anon": LOGIN}),
    Row("mail settings change", "POST", "/inbox/settings/", body={"mail": "never"}, expect=by_role(302, anon=302),
        **PAGE),
    # finn's one-click link: it stands for finn (signed in or not); anyone else signed in is refused
    Row("mail link page (finn's)", "GET", "/inbox/mail/{finlink}/",
        expect=by_role(403, anon=200, finn=200), after=lambda w, role: _nobody_decided(w), **PAGE),
    Row("mail link decide (finn's)", "POST", "/inbox/mail/{finlink}/",
        expect=by_role(403, anon=200, finn=200), after=lambda w, role: _decided_by_finn_link(w, role), **PAGE),
    # the language picker: anyone may choose (the sign-in page has it too); a signed-in person's
    # choice is kept in their own profile only
    Row("language picker", "POST", "/i18n/setlang/", body={"language": "fr", "next": "/"},
        expect=by_role(302, anon=302), location={r: "/" for r in ROLES},
        after=lambda w, role: _language_saved_for(w, role), **PAGE),
    Row("JavaScript catalogue", "GET", "/jsi18n/", expect=by_role(200, anon=200), **PAGE),
    # a person's own settings (language, time zone): only their own profile changes
    Row("your settings", "GET", "/settings/", expect=by_role(200, anon=302), **PAGE, location={"anon": LOGIN}),
    Row("your settings change", "POST", "/settings/", body={"language": "fr", "time_zone": "Asia/Jakarta"},
        expect=by_role(302, anon=302), after=lambda w, role: _zone_saved_for(w, role), **PAGE),
    Row("policy console", "GET", "/policies/", expect=by_role(403, anon=302, admin=200), **PAGE),
    Row("policy console edit", "GET", "/policies/transfer_money/", expect=by_role(403, anon=302, admin=200), **PAGE),
    Row("audit page", "GET", "/audit/", expect=by_role(200, anon=302, alice=403, bob=403), **PAGE),
    Row("audit CSV export", "GET", "/audit/export.csv", expect=by_role(200, anon=302, alice=403, bob=403), **PAGE),
    Row("admin index", "GET", "/admin/", expect=by_role(302, admin=200, anon=302), **PAGE),
    Row("admin policies", "GET", "/admin/approvals/toolpolicy/", expect=by_role(302, admin=200, anon=302), **PAGE),
    Row("admin users", "GET", "/admin/auth/user/", expect=by_role(302, admin=200, anon=302), **PAGE),
    # --- REST (token) ---
    Row("API schema (public document)", "GET", "/api/schema/", expect=by_role(200, anon=200), **API),
    Row("threads list", "GET", "/api/threads/", expect=by_role(200, anon=401), **API),
    Row("thread create", "POST", "/api/threads/", body={"agent": "banking"}, expect=by_role(201, anon=401), **API),
    Row("thread read", "GET", "/api/threads/{thread}/", expect=owner_only(200), **API),
    Row("thread rename", "PATCH", "/api/threads/{thread}/", body={"title": "mine"}, expect=owner_only(200), **API),
    Row("thread delete (busy: a request waits)", "DELETE", "/api/threads/{thread}/", expect=owner_only(409), **API),
    Row("thread messages", "GET", "/api/threads/{thread}/messages/", expect=owner_only(200), **API),
    Row("thread new message (a request waits)", "POST", "/api/threads/{thread}/messages/", body={"content": "hi"},
        expect=owner_only(409), **API),
    Row("thread answer (no open question)", "POST", "/api/threads/{thread}/answer/", body={"answer": "yes"},
        expect=owner_only(409), **API),
    Row("thread questions", "GET", "/api/threads/{thread}/questions/", expect=owner_only(200), **API),
    Row("thread state", "GET", "/api/threads/{thread}/state/", expect=owner_only(200), **API),
    Row("thread state change", "PUT", "/api/threads/{thread}/state/", body={"base_version": 0, "state": {"n": 1}},
        expect=owner_only(200), **API, after=lambda world, role: _state_changed_by(world, role)),
    Row("runs list", "GET", "/api/runs/", expect=by_role(200, anon=401), **API),
    Row("run read", "GET", "/api/runs/{run}/", expect=owner_only(200), **API),
    Row("run cancel", "POST", "/api/runs/{run}/cancel/", expect=owner_only(202), **API),
    Row("run retry (not failed)", "POST", "/api/runs/{run}/retry/", expect=owner_only(409), **API),
    Row("approvals list", "GET", "/api/approvals/", expect=by_role(200, anon=401), **API),
    Row("approval read (finance)", "GET", "/api/approvals/{fin}/",
        expect=by_role(404, anon=401, alice=200, finn=200, admin=200), **API),
    # four eyes: alice asked for it; admin sees it but is not in finance
    Row("approval decide (finance)", "POST", "/api/approvals/{fin}/decide/", body={"decision": "approve"},
        expect=by_role(404, anon=401, alice=403, finn=200, admin=403), **API),
    Row("approval decide (requester-routed)", "POST", "/api/approvals/{req}/decide/", body={"decision": "approve"},
        expect=by_role(404, anon=401, alice=200, admin=403), **API),
    # an agent running elsewhere: anyone with a token asks (four eyes and routing do the rest)
    Row("approval create (outside agent)", "POST", "/api/approvals/",
        body={"tool_name": "crm.lookup", "arguments": {"q": "x"}, "schema": {"type": "object"}},
        expect=by_role(201, anon=401), **API),
    Row("approval long-poll", "GET", "/api/approvals/{fin}/?wait=0",
        expect=by_role(404, anon=401, alice=200, finn=200, admin=200), **API),
    # only requests made through POST /api/approvals/ take an outcome (this one came from a run)
    Row("approval outcome (not an outside request)", "POST", "/api/approvals/{fin}/outcome/",
        body={"outcome": "succeeded"}, expect=by_role(404, anon=401, alice=409, finn=409, admin=409), **API),
    # and only such requests are withdrawn by their agent (this one came from a run: nobody withdraws it)
    Row("approval withdraw (not an outside request)", "POST", "/api/approvals/{fin}/withdraw/",
        body={}, expect=by_role(404, anon=401, alice=409, finn=409, admin=409), **API),
    Row("approvals bulk decide", "POST", "/api/approvals/bulk-decide/",
        body={"ids": ["{fin}"], "decision": "approve"}, expect=by_role(200, anon=401),
        after=lambda w, role: _only_finn_decided(w, role), **API),
    Row("policies list", "GET", "/api/policies/", expect=by_role(403, anon=401, admin=200), **API),
    Row("policy create", "POST", "/api/policies/",
        body={"tool_name": "check_balance", "mode": "always", "approver_kind": "requester"},
        expect=by_role(403, anon=401, admin=201), **API),
    Row("policy read", "GET", "/api/policies/transfer_money/", expect=by_role(403, anon=401, admin=200), **API),
    # PATCH of a tool on its code defaults saves its first row: 201
    Row("policy change", "PATCH", "/api/policies/transfer_money/", body={"risk": "critical"},
        expect=by_role(403, anon=401, admin=201), **API),
    Row("policy delete (none saved)", "DELETE", "/api/policies/transfer_money/",
        expect=by_role(403, anon=401, admin=404), **API),
    # webhooks: admins only (the create answer carries the secret, once)
    Row("webhooks list", "GET", "/api/webhooks/", expect=by_role(403, anon=401, admin=200), **API),
    Row("webhook create", "POST", "/api/webhooks/", body={"url": "https://hooks.example.com/x", "events": []},
        expect=by_role(403, anon=401, admin=201), **API),
    Row("webhook read", "GET", "/api/webhooks/{hook}/", expect=by_role(403, anon=401, admin=200), **API),
    Row("webhook change", "PATCH", "/api/webhooks/{hook}/", body={"events": ["approval.decided"]},
        expect=by_role(403, anon=401, admin=200), **API),
    Row("webhook delete", "DELETE", "/api/webhooks/{hook}/", expect=by_role(403, anon=401, admin=204), **API),
    # every account reads its own callback secret (what signs its requests' callbacks), no other
    Row("own callback secret", "GET", "/api/webhooks/callback-secret/", expect=by_role(200, anon=401), **API),
    Row("webhook deliveries list", "GET", "/api/webhook-deliveries/", expect=by_role(403, anon=401, admin=200),
        **API),
    Row("webhook delivery read", "GET", "/api/webhook-deliveries/{delivery}/",
        expect=by_role(403, anon=401, admin=200), **API),
    Row("webhook delivery replay", "POST", "/api/webhook-deliveries/{delivery}/replay/",
        expect=by_role(403, anon=401, admin=202), **API),
    # MCP servers: admins only (seed_demo registers `notes`); a server whose command is missing is saved unhealthy
    Row("mcp servers list", "GET", "/api/mcp-servers/", expect=by_role(403, anon=401, admin=200), **API),
    # a stdio server's command is set by a signed-in admin, not by a token (AGUI_MCP_COMMANDS_BY_TOKEN)
    Row("mcp server create (stdio, by token)", "POST", "/api/mcp-servers/",
        body={"name": "matrix", "transport": "stdio", "command": "/nonexistent/mcp-server"},
        expect=by_role(403, anon=401), **API),
    Row("mcp server create (http)", "POST", "/api/mcp-servers/",
        body={"name": "matrix-web", "transport": "http", "url": "http://127.0.0.1:9/mcp"},
        expect=by_role(403, anon=401, admin=201), **API),
    Row("mcp server read", "GET", "/api/mcp-servers/notes/", expect=by_role(403, anon=401, admin=200), **API),
    Row("mcp server change", "PATCH", "/api/mcp-servers/notes/", body={"enabled": False},
        expect=by_role(403, anon=401, admin=200), **API),
    Row("mcp server refresh", "POST", "/api/mcp-servers/notes/refresh/", expect=by_role(403, anon=401, admin=200),
        **API),
    Row("mcp server delete", "DELETE", "/api/mcp-servers/notes/", expect=by_role(403, anon=401, admin=204), **API),
    Row("audit list", "GET", "/api/audit/", expect=by_role(200, anon=401), **API),
    Row("audit read (finance request)", "GET", "/api/audit/{audit}/",
        expect=by_role(404, anon=401, alice=200, finn=200, admin=200), **API),
    Row("grants list", "GET", "/api/grants/", expect=by_role(200, anon=401), **API),
    Row("grant read (alice's)", "GET", "/api/grants/{grant}/", expect=by_role(404, anon=401, alice=200, admin=200),
        **API),
    Row("grant revoke (alice's)", "POST", "/api/grants/{grant}/revoke/",
        expect=by_role(404, anon=401, alice=200, admin=200), **API),
    Row("API token (the caller's: when it expires)", "GET", "/api/auth/token/", expect=by_role(200, anon=401), **API),
    # --- AG-UI (token) ---
    Row("AG-UI agents", "GET", "/agui/", expect=by_role(200, anon=401), **API),
    Row("AG-UI run, new thread", "POST", "/agui/banking/", body="new-run", expect=by_role(200, anon=401), **API),
    Row("AG-UI run on alice's thread", "POST", "/agui/banking/", body="run-on-thread",
        expect=by_role(200, anon=401), stream_error={r: "thread_id_used" for r in ("bob", "rita", "finn", "admin")},
        **API),
]

def _only_finn_decided(world, role):
    from approvals.models import ApprovalRequest

    status = ApprovalRequest.objects.get(pk=world["fin"]).status
    assert status == ("approved" if role == "finn" else "pending"), f"as {role}: the request is {status}"


def _language_saved_for(world, role):
    from people.models import Profile

    saved = dict(Profile.objects.values_list("user__username", "language"))
    assert saved == ({} if role == "anon" else {role: "fr"}), f"as {role}: profiles {saved}"


def _zone_saved_for(world, role):
    from people.models import Profile

    saved = dict(Profile.objects.values_list("user__username", "time_zone"))
    assert saved == ({} if role == "anon" else {role: "Asia/Jakarta"}), f"as {role}: profiles {saved}"


def _nobody_decided(world):
    from approvals.models import ApprovalRequest

    assert ApprovalRequest.objects.get(pk=world["fin"]).status == "pending"


def _decided_by_finn_link(world, role):
    from approvals.models import ApprovalRequest

    req = ApprovalRequest.objects.get(pk=world["fin"])
    if role in ("anon", "finn"):
        assert (req.status, req.decided_by.username) == ("approved", "finn"), f"as {role}: {req.status}"
    else:
        assert req.status == "pending", f"as {role}: the request is {req.status}"


def _state_changed_by(world, role):
    from state import services as state_services

    data = state_services.snapshot(f"thread:{world['thread']}")[0]
    assert data == ({"n": 1} if role == "alice" else {}), f"as {role}: the state is {data}"


WS_ROWS = [
    # (name, path, expected per role: True = accepted, else the close code)
    ("thread socket", "/ws/threads/{thread}/", by_role(4403, anon=4401, alice=True)),
    ("inbox socket", "/ws/inbox/", by_role(True, anon=4401, alice=4403, bob=4403)),
]


@pytest.fixture
def world(demo):
    """alice's thread with a paused run: a finance transfer and a cancellation she confirms herself."""
    alice = demo["alice"]
    thread = services.create_thread(alice, "banking", thread_id=f"sec-{uuid.uuid4()}")
    run = Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED)

    def ask(tool, args, description):
        return approval_services.request(
            tool_name=tool, arguments=args, requester=alice, verdict=policy.evaluate(tool, args),
            description=description, thread_ref=thread.pk, run_ref=run.pk, tool_call_ref=f"call-{uuid.uuid4()}")

    fin = ask("transfer_money", {"from_account": "1234567890", "to_account": "0987654321", "amount": 5.0,
                                 "currency": "USD"}, "Transfer 5.00 USD")
    req = ask("cancel_subscription", {"subscription_id": "sub_123"}, "Cancel sub_123")
    assert fin.approver_group.name == "finance" and req.approver_kind == "requester"
    grant = ThreadGrant.objects.create(tool_name="cancel_subscription", thread_ref=thread.pk, user=alice)
    audit = AuditEvent.objects.filter(request=fin).order_by("id").first()
    hook = WebhookEndpoint.objects.create(url="https://hooks.example.com/in", events=[])
    delivery = WebhookDelivery.objects.create(endpoint=hook, url=hook.url, event_type="approval.requested",
                                              payload={"type": "approval.requested"}, status="failed")
    finlink = mail_links.issue(fin, demo["finn"])["approve"].rstrip("/").rsplit("/", 1)[1]  # finn's mail's link
    return {"users": demo, "thread": thread.pk, "run": run.pk, "fin": fin.pk, "req": req.pk, "grant": grant.pk,
            "audit": audit.pk, "hook": hook.pk, "delivery": delivery.pk, "finlink": finlink}


def _fill(text, world):
    return text.format(**{k: v for k, v in world.items() if k != "users"})


def _client(row, role, world):
    from rest_framework.authtoken.models import Token

    client = Client(raise_request_exception=False)
    headers = {}
    if role != "anon":
        user = world["users"][role]
        if row.auth == "session":
            client.force_login(user)
        else:
            headers["HTTP_AUTHORIZATION"] = f"Token {Token.objects.get_or_create(user=user)[0].key}"
    return client, headers


def _body(row, world):
    if row.body == "new-run" or row.body == "run-on-thread":
        thread_id = world["thread"] if row.body == "run-on-thread" else f"new-{uuid.uuid4()}"
        return json.dumps({"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "messages": [
            {"id": f"m-{uuid.uuid4()}", "role": "user", "content": "hello"}]})
    if row.body is None:
        return None

    def fill(value):
        if isinstance(value, str):
            return _fill(value, world)
        if isinstance(value, list):
            return [fill(v) for v in value]
        return {k: fill(v) for k, v in value.items()} if isinstance(value, dict) else value

    return fill(row.body)


@pytest.fixture
def no_enqueue(monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda *a, **k: None)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_http_matrix(world, no_enqueue, row, role):
    client, headers = _client(row, role, world)
    path = _fill(row.path, world)
    body = _body(row, world)
    method = row.method.lower()
    if row.auth == "session" and method == "post":
        response = client.post(path, body or {}, **headers)  # a form post
    elif body is None:
        response = getattr(client, method)(path, **headers)
    else:
        data = body if isinstance(body, str) else json.dumps(body)
        response = getattr(client, method)(path, data, content_type="application/json", **headers)
    expected = row.expect[role]
    allowed = expected if isinstance(expected, set) else {expected}
    assert response.status_code in allowed, (
        f"{row.method} {path} as {role}: {response.status_code}, expected {expected}: "
        f"{getattr(response, 'content', b'')[:300]!r}")
    if role in row.location:
        assert response["Location"].startswith(row.location[role]), response["Location"]
    if role in row.stream_error:
        frames = [json.loads(f[len("data: "):]) for f in _streamed(response).split("\n\n") if f]
        assert [f["type"] for f in frames] == ["RUN_STARTED", "RUN_ERROR"], frames
        assert frames[-1]["code"] == row.stream_error[role], frames
        assert not Run.objects.filter(pk=frames[0]["runId"]).exists()  # nothing started
    if row.after:
        row.after(world, role)
    if path.startswith(("/api/", "/agui/")) and response.status_code >= 400:
        assert response["Content-Type"].startswith("application/json") and response.json().get("message")


def _streamed(response):
    async def collect():
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(collect)().decode()


def test_every_route_has_a_row(world):
    """Each URL pattern of the project (the admin's own beyond its index and two pages aside,
    DRF's format-suffix twins aside) is exercised by a row above."""

    def routes(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from routes(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield prefix + str(p.pattern)

    def norm(route):
        return route.replace("^", "")

    covered = {norm(resolve(_fill(r.path, world).split("?")[0]).route) for r in ROWS}
    missing = sorted(norm(r) for r in routes(get_resolver().url_patterns)
                     if not r.startswith("admin/") and "(?P<format>" not in r and norm(r) not in covered)
    assert not missing, f"routes without a row in the security matrix: {missing}"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name,path,expected", WS_ROWS, ids=[r[0] for r in WS_ROWS])
async def test_websocket_matrix(world, role, name, path, expected):
    comm = await _socket(_fill(path, world), role, world)
    connected, code = await comm.connect(timeout=10)
    want = expected[role]
    if want is True:
        assert connected, f"{path} as {role}: refused with {code}"
        # a refused socket is accepted and closed at once with its code (a page reads it; a refused
        # handshake reaches a browser as 1006 alone): an accepted one sends something else first
        if not await comm.receive_nothing(timeout=0.5):  # the inbox says nothing until a notice
            first = await comm.receive_output(timeout=10)
            assert first["type"] != "websocket.close", f"{path} as {role}: closed with {first.get('code')}"
    else:
        assert connected, f"{path} as {role}: refused at the handshake, expected close {want}"
        closed = await comm.receive_output(timeout=10)
        assert closed == {"type": "websocket.close", "code": want}, f"{path} as {role}: {closed}; expected close {want}"
    await comm.disconnect()


async def _socket(path, role, world, origin="http://localhost"):
    """Through the project's real ASGI application: origin validator, session auth, routing."""
    from agui_project.asgi import application

    headers = [(b"host", b"localhost")]
    if origin:
        headers.append((b"origin", origin.encode()))
    if role != "anon":
        client = Client()
        await sync_to_async(client.force_login)(world["users"][role])
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("origin", ["http://evil.example", "null", None])
async def test_websocket_foreign_or_missing_origin_is_refused(world, origin):
    for path in (f"/ws/threads/{world['thread']}/", "/ws/inbox/"):
        comm = await _socket(path, "alice" if "threads" in path else "finn", world, origin=origin)
        connected, _code = await comm.connect(timeout=10)
        assert not connected, f"{path} accepted Origin {origin!r}"
        await comm.disconnect()


# --- CSRF -----------------------------------------------------------------------------------

def _csrf_client(user=None):
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    return client


def _token_from(client, path):
    page = client.get(path)
    assert page.status_code == 200
    return client.cookies["csrftoken"].value


@pytest.mark.parametrize("form", ["login", "logout", "decide", "agui-session", "api-session"])
def test_csrf_enforced_on_every_state_changing_form(world, no_enqueue, settings, form):
    users = world["users"]
    if form == "login":
        client = _csrf_client()
        data, path, page = {"username": "alice", "password": settings.DEMO_PASSWORD}, LOGIN, LOGIN
    elif form == "logout":
        client = _csrf_client(users["alice"])
        data, path, page = {}, "/accounts/logout/", "/chat/"
    elif form == "decide":
        client = _csrf_client(users["finn"])
        data, path, page = APPROVE_FORM, f"/inbox/{world['fin']}/", f"/inbox/{world['fin']}/"
    if form in ("login", "logout", "decide"):
        refused = client.post(path, data)
        assert refused.status_code == 403
        token = _token_from(client, page)
        accepted = client.post(path, {**data, "csrfmiddlewaretoken": token})
        assert accepted.status_code == 302, accepted.content[:300]
        return
    # a browser session calling the machine endpoints: same rules (token clients carry no cookie)
    client = _csrf_client(users["alice"])
    if form == "agui-session":
        body = _body(Row("", "POST", "", "token", {}, body="new-run"), world)
        refused = client.post("/agui/banking/", body, content_type="application/json")
    else:
        refused = client.post("/api/threads/", {"agent": "banking"}, content_type="application/json")
    assert refused.status_code == 403 and refused.json()["message"]
    token = _token_from(client, "/chat/")
    if form == "agui-session":
        accepted = client.post("/agui/banking/", body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
        assert accepted.status_code == 200
    else:
        accepted = client.post("/api/threads/", {"agent": "banking"}, content_type="application/json",
                               HTTP_X_CSRFTOKEN=token)
        assert accepted.status_code == 201


# --- secrets stay out of logs ----------------------------------------------------------------

SECRET_KEY_MARK = "sk-live-DO-NOT-LOG-9f8e7d"
MCP_SECRET = "mcp-secret-DO-NOT-LOG-41c2"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_no_secret_or_token_in_logs(celery_worker_live, fake_llm, demo, caplog, settings):
    """Tokens, passwords, session keys, the model key and the secret key never reach a log line,
    on success paths and failure paths alike (bad token, failed login, model errors, a run)."""
    settings.AGUI_MCP_COMMANDS_BY_TOKEN = True  # the stdio server below is registered with the admin's token
    from rest_framework.authtoken.models import Token

    from tests.conftest import wait_for_event

    settings.OPENAI_API_KEY = SECRET_KEY_MARK
    caplog.set_level(logging.DEBUG)
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    client = Client(raise_request_exception=False)
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    client.post("/accounts/login/", {"username": "alice", "password": settings.DEMO_PASSWORD})
    client.post("/accounts/login/", {"username": "alice", "password": "wrong-password-xyz"})
    session_key = client.cookies["sessionid"].value if "sessionid" in client.cookies else None
    client.get("/api/threads/", HTTP_AUTHORIZATION=f"Token {token}x")  # a wrong token
    client.post("/agui/banking/", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}z")
    fake_llm.push({"error": 401, "error_message": "bad key"}, {"text": "fine"})
    for _ in range(2):
        thread_id = client.post("/api/threads/", {"agent": "banking"}, content_type="application/json", **auth).json()["id"]
        client.post(f"/api/threads/{thread_id}/messages/", {"content": "hello"}, content_type="application/json", **auth)
        wait_for_event(thread_id, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR"))
    # an MCP server's env and headers (write-only) on the failure paths: it cannot start / cannot be reached
    admin = {"HTTP_AUTHORIZATION": f"Token {Token.objects.get_or_create(user=demo['admin'])[0].key}"}
    for body in ({"name": "leaky", "command": "/nonexistent/mcp", "env": {"KEY": MCP_SECRET}},
                 {"name": "leaky-web", "transport": "http", "url": "http://127.0.0.1:9/mcp",
                  "headers": {"Authorization": f"Bearer {MCP_SECRET}"}}):
        made = client.post("/api/mcp-servers/", body, content_type="application/json", **admin)
        assert made.status_code == 201 and made.json()["healthy"] is False and made.json()["error"], made.content
        assert MCP_SECRET not in made.content.decode()
    secrets = {"token": token, "password": settings.DEMO_PASSWORD, "wrong password": "wrong-password-xyz",
               "model key": SECRET_KEY_MARK, "secret key": settings.SECRET_KEY, "MCP secret": MCP_SECRET}
    if session_key:
        secrets["session"] = session_key
    text = "\n".join(caplog.text.splitlines())
    assert caplog.records, "nothing was logged: the test would prove nothing"
    leaked = [name for name, value in secrets.items() if value and value in text]
    assert not leaked, f"secrets in the logs: {leaked}"


# --- production cookie flags ------------------------------------------------------------------

def test_cookies_secure_and_httponly_when_not_debug(tmp_path):
    """A real login under production settings (DEBUG off), in a fresh process."""
    script = """
import django, os
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
call_command("seed_demo", stdout=open(os.devnull, "w"))
from django.test import Client
c = Client(HTTP_HOST="app.example")
page = c.get("/accounts/login/", secure=True)
token = page.cookies["csrftoken"]
r = c.post("/accounts/login/", {"username": "alice", "password": "agui-demo", "csrfmiddlewaretoken": token.value},
           secure=True, HTTP_REFERER="https://app.example/accounts/login/")
s = r.cookies["sessionid"]
print(repr((r.status_code, bool(s["secure"]), bool(s["httponly"]), bool(token["secure"]), s["samesite"])))
"""
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "x" * 50, "DJANGO_ALLOWED_HOSTS": "app.example",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.sqlite3'}", "AGUI_VAR_DIR": str(tmp_path),
           "DEMO_PASSWORD": "agui-demo", "DJANGO_SETTINGS_MODULE": "agui_project.settings"}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    status, session_secure, session_httponly, csrf_secure, samesite = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307
    assert status == 302
    assert session_secure and session_httponly and csrf_secure
    assert samesite in ("Lax", "Strict")


def test_debug_off_requires_a_secret_key(tmp_path):
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "", "AGUI_VAR_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "agui_project.settings"}
    out = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "DJANGO_SECRET_KEY" in out.stderr
