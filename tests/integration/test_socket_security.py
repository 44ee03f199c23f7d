"""WebSockets through the real ASGI stack: the exact-origin check (issue 13, finding 11) and
logout closing the session's sockets (finding 12)."""

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from agents import services
from state import services as state_services
from tests.helpers import next_event

pytestmark = [pytest.mark.django_db(transaction=True)]
PATCH = {"type": "state_patch", "baseVersion": 0, "patch": [{"op": "add", "path": "/note", "value": "hi"}]}


async def signed_in(user):
    client = Client()
    await sync_to_async(client.force_login)(user)
    return client


def socket(path, client, origin="http://localhost:8000", host="localhost:8000"):
    from agui_project.asgi import application

    headers = [(b"host", host.encode()), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def until_snapshot_done(comm):
    for _ in range(20):
        frame = await next_event(comm)
        if frame.get("type") == "CUSTOM" and frame.get("name") == "approvals":
            return
    raise AssertionError("no snapshot")


@pytest.mark.parametrize("origin,host,trusted,accepted", [
    ("http://localhost:9999", "localhost:8000", [], False),  # another web app on the same host
    ("https://localhost:8000", "localhost:8000", [], False),  # another scheme
    ("http://localhost:8000", "localhost:8000", [], True),  # the site itself
    ("http://LOCALHOST:8000", "localhost:8000", [], True),
    ("http://localhost", "localhost:80", [], True),  # the default port, written or not
    ("http://localhost:8000", "evil.example:8000", [], False),  # a Host the site does not serve
    ("https://chat.example.com", "localhost:8000", ["https://chat.example.com"], True),  # DJANGO_CSRF_TRUSTED_ORIGINS
    ("https://chat.example.com:8443", "localhost:8000", ["https://chat.example.com"], False),
    ("https://a.example.com", "localhost:8000", ["https://*.example.com"], True),
    ("http://a.example.com", "localhost:8000", ["https://*.example.com"], False),
    ("null", "localhost:8000", [], False),
    (None, "localhost:8000", [], False),
])
async def test_socket_origin_must_be_the_site_or_trusted(demo, settings, origin, host, trusted, accepted):
    settings.CSRF_TRUSTED_ORIGINS = trusted
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    for path, user in ((f"/ws/threads/{thread.pk}/", alice), ("/ws/inbox/", demo["finn"])):
        comm = socket(path, await signed_in(user), origin=origin, host=host)
        connected, _code = await comm.connect(timeout=10)
        assert connected is accepted, f"{path} with Origin {origin!r}, Host {host!r}"
        if connected and "threads" in path:  # the socket works: a patch is applied
            await until_snapshot_done(comm)
            await comm.send_to(text_data=json.dumps(PATCH))
            reply = await next_event(comm)
            while reply.get("type") != "state_ack":
                reply = await next_event(comm)
        await comm.disconnect()
    data, _version = await sync_to_async(state_services.snapshot)(thread.state_key)
    assert (data == {"note": "hi"}) is accepted


async def test_socket_behind_a_tls_proxy_takes_its_https_origin(demo, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    client = await signed_in(demo["finn"])
    comm = socket("/ws/inbox/", client, origin="https://chat.example.com", host="chat.example.com")
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    comm.scope["headers"].append((b"x-forwarded-proto", b"https"))
    assert (await comm.connect(timeout=10))[0]
    await comm.disconnect()
    plain = socket("/ws/inbox/", client, origin="https://chat.example.com", host="chat.example.com")
    assert not (await plain.connect(timeout=10))[0]  # without the proxy's header the connection is http
    await plain.disconnect()


async def test_logout_closes_that_browsers_sockets_and_they_take_no_more_patches(demo):
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    browser, other_browser = await signed_in(alice), await signed_in(alice)
    chat = socket(f"/ws/threads/{thread.pk}/", browser)
    other_chat = socket(f"/ws/threads/{thread.pk}/", other_browser)
    for comm in (chat, other_chat):
        assert (await comm.connect(timeout=10))[0]
        await until_snapshot_done(comm)
    finn = await signed_in(demo["finn"])
    inbox = socket("/ws/inbox/", finn)
    assert (await inbox.connect(timeout=10))[0]

    response = await sync_to_async(browser.post)("/accounts/logout/")
    assert response.status_code == 302
    closed = await chat.receive_output(timeout=10)
    assert closed == {"type": "websocket.close", "code": 4401}
    # a frame that still arrives is dropped: the session it was opened with has ended
    await chat.send_to(text_data=json.dumps(PATCH))
    assert await chat.receive_nothing(timeout=0.5)
    data, version = await sync_to_async(state_services.snapshot)(thread.state_key)
    assert (data, version) == ({}, 0)

    # alice's other browser is still signed in: its socket stays open and works
    assert await other_chat.receive_nothing(timeout=0.2)
    await other_chat.send_to(text_data=json.dumps(PATCH))
    reply = await next_event(other_chat)
    while reply.get("type") != "state_ack":
        reply = await next_event(other_chat)
    assert (await sync_to_async(state_services.snapshot)(thread.state_key))[0] == {"note": "hi"}

    # the inbox socket closes with its reviewer's logout too
    await sync_to_async(finn.post)("/accounts/logout/")
    assert await inbox.receive_output(timeout=10) == {"type": "websocket.close", "code": 4401}
    for comm in (chat, other_chat, inbox):
        await comm.disconnect()


async def test_ends_that_send_no_signal_close_the_sockets_too(demo, monkeypatch):
    """Signing in as someone else in the same browser (login() flushes the old session and sends no
    user_logged_out), a session deleted on the server, an account switched off by an update that
    sends no signal: each left the sockets open, the inbox hearing new requests and the chat taking
    patches as a user who was no longer there. Each socket now asks for itself."""
    from django.contrib.auth.models import User
    from django.contrib.sessions.models import Session

    from agui_project import sockets

    monkeypatch.setattr(sockets, "STANDING_SECONDS", 0.05)
    alice = demo["alice"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")

    browser = await signed_in(alice)  # alice's chat, then bob signs in on the same browser
    chat = socket(f"/ws/threads/{thread.pk}/", browser)
    assert (await chat.connect(timeout=10))[0]
    await until_snapshot_done(chat)
    await sync_to_async(browser.force_login)(demo["bob"])
    assert await chat.receive_output(timeout=10) == {"type": "websocket.close", "code": 4401}
    await chat.send_to(text_data=json.dumps(PATCH))  # too late: dropped
    assert (await sync_to_async(state_services.snapshot)(thread.state_key)) == ({}, 0)

    finn = await signed_in(demo["finn"])  # finn's session deleted on the server (admin, clearsessions)
    inbox = socket("/ws/inbox/", finn)
    assert (await inbox.connect(timeout=10))[0]
    assert await inbox.receive_nothing(timeout=0.3)  # standing: asked, and it stays open
    await sync_to_async(Session.objects.filter(session_key=finn.session.session_key).delete)()
    assert await inbox.receive_output(timeout=10) == {"type": "websocket.close", "code": 4401}

    rita = await signed_in(demo["rita"])  # rita switched off, or out of her group, by an update
    for change in (lambda: User.objects.filter(username="rita").update(is_active=False),
                   lambda: User.groups.through.objects.filter(user__username="rita").delete()):
        inbox = socket("/ws/inbox/", rita)
        assert (await inbox.connect(timeout=10))[0]
        assert await inbox.receive_nothing(timeout=0.3)
        await sync_to_async(change)()
        assert await inbox.receive_output(timeout=10) == {"type": "websocket.close", "code": 4012}
        await sync_to_async(User.objects.filter(username="rita").update)(is_active=True)
    for comm in (chat, inbox):
        await comm.disconnect()


async def test_an_inbox_socket_compares_its_groups_with_those_it_joined(demo, monkeypatch):
    """A membership removed without a signal before the socket's first standing read was taken for
    the baseline, and the inbox went on hearing the group it had joined."""
    from django.contrib.auth.models import User

    from agui_project import sockets

    monkeypatch.setattr(sockets, "STANDING_SECONDS", 0.05)
    rita = await signed_in(demo["rita"])
    inbox = socket("/ws/inbox/", rita)
    assert (await inbox.connect(timeout=10))[0]
    await sync_to_async(User.groups.through.objects.filter(user__username="rita").delete)()  # at once
    assert await inbox.receive_output(timeout=10) == {"type": "websocket.close", "code": 4012}
    await inbox.disconnect()


async def test_the_socket_stack_resolves_session_and_user_and_leaves_send_unwrapped(demo):
    """What reaches a consumer: the signed-in user and the session from the cookie, and the
    server's own send (channels' session wrapper would look at the session on every frame)."""
    from agui_project.sockets import socket_stack

    client = await signed_in(demo["alice"])
    seen = {}

    async def inner(scope, receive, send):
        seen["send"], seen["session"] = send, scope["session"].session_key
        seen["user"] = await sync_to_async(lambda: scope["user"].username)()

    async def server_send(message):
        pass

    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    await socket_stack(inner)({"type": "websocket", "headers": [(b"cookie", cookie)]}, None, server_send)
    assert seen == {"send": server_send, "session": client.cookies["sessionid"].value, "user": "alice"}


async def _closes_then_reconnects_as(comm, path, client, accepted):
    """The socket is closed for a check anew (4012), and the handshake it reconnects with decides."""
    assert await comm.receive_output(timeout=10) == {"type": "websocket.close", "code": 4012}
    await comm.disconnect()
    again = socket(path, client)
    connected, _code = await again.connect(timeout=10)
    assert connected  # a refusal is accepted first, to be told why (SignedInSocket.refuse)
    if accepted:
        assert await again.receive_nothing(timeout=0.2)
    else:
        assert await again.receive_output(timeout=10) == {"type": "websocket.close", "code": 4401}
    await again.disconnect()


@pytest.mark.parametrize("change", ["deactivated", "new password"])
async def test_an_account_switched_off_or_given_a_new_password_loses_its_open_sockets(demo, change):
    """A socket authenticates once: a deactivated account's open chat still took state patches."""
    alice, finn = demo["alice"], demo["finn"]
    thread = await sync_to_async(services.create_thread)(alice, "banking")
    browser, reviewer = await signed_in(alice), await signed_in(finn)
    chat, inbox = socket(f"/ws/threads/{thread.pk}/", browser), socket("/ws/inbox/", reviewer)
    for comm in (chat, inbox):
        assert (await comm.connect(timeout=10))[0]
    await until_snapshot_done(chat)

    def change_access(user):
        if change == "deactivated":
            user.is_active = False
        else:
            user.set_password("a-new-password-1")
        user.save()

    await sync_to_async(change_access)(alice)
    await _closes_then_reconnects_as(chat, f"/ws/threads/{thread.pk}/", browser, accepted=False)
    assert await inbox.receive_nothing(timeout=0.2)  # another user's socket is not touched
    await sync_to_async(change_access)(finn)
    await _closes_then_reconnects_as(inbox, "/ws/inbox/", reviewer, accepted=False)
    assert await sync_to_async(state_services.snapshot)(thread.state_key) == ({}, 0)


async def test_a_reviewer_taken_out_of_a_group_stops_hearing_it(demo):
    """The inbox socket joins the notices of the groups its reviewer had when it opened: one taken
    out of a group kept getting that group's requests."""
    from django.contrib.auth.models import Group

    finn = demo["finn"]
    reviewer = await signed_in(finn)
    finance = await sync_to_async(Group.objects.get)(name="finance")
    for remove in (lambda: finn.groups.remove(finance), lambda: finance.user_set.clear()):
        inbox = socket("/ws/inbox/", reviewer)
        assert (await inbox.connect(timeout=10))[0]
        await sync_to_async(remove)()
        await _closes_then_reconnects_as(inbox, "/ws/inbox/", reviewer, accepted=True)  # still in reviewers
        await sync_to_async(finance.user_set.add)(finn)


async def test_a_thread_socket_named_with_a_nul_is_refused(demo):
    """On PostgreSQL, which stores no NUL in text, its lookup raised inside the handshake."""
    comm = socket("/ws/threads/a%00b/", await signed_in(demo["alice"]))
    assert (await comm.connect(timeout=10))[0]  # accepted only to be told why (SignedInSocket.refuse)
    assert await comm.receive_output(timeout=10) == {"type": "websocket.close", "code": 4403}
    await comm.disconnect()


async def test_a_refused_socket_says_why_in_the_log(demo, settings, caplog):
    """Daphne's access log says only WSREJECT: behind a proxy that drops the scheme header on /ws/,
    every socket of the site was refused and nothing said why."""
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    client = await signed_in(demo["finn"])
    comm = socket("/ws/inbox/", client, origin="https://chat.example.com", host="chat.example.com")
    with caplog.at_level("WARNING", logger="agui_project.sockets"):
        assert not (await comm.connect(timeout=10))[0]
    await comm.disconnect()
    (record,) = [r for r in caplog.records if r.name == "agui_project.sockets"]
    assert record.levelname == "WARNING"
    message = record.getMessage()
    assert "/ws/inbox/" in message and "'https://chat.example.com'" in message, message
    assert "http://chat.example.com" in message and "X-FORWARDED-PROTO" in message, message
