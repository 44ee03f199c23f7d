"""A WebSocket handshake on a path no consumer serves is refused (4404, Daphne's 403) with one INFO
line: channels' URLRouter raised ValueError for it, which Daphne answered with a 500 and a
traceback in the log, per anonymous attempt (outside test, hostile.md section 7)."""

import logging

import pytest
from channels.testing import WebsocketCommunicator

from agui_project.asgi import application  # imported once: Django's logging set up before caplog's
from agui_project.sockets import CLOSE_LOGGED_OUT, CLOSE_NO_SUCH_SOCKET

pytestmark = [pytest.mark.django_db(transaction=True)]
SITE = [(b"host", b"localhost:8000"), (b"origin", b"http://localhost:8000")]


async def handshake(path):
    """(accepted, close code): a refusal our consumers make is accepted first, then closed, so
    that a page can read its code."""
    comm = WebsocketCommunicator(application, path, headers=SITE)
    try:
        accepted, code = await comm.connect(timeout=5)
        if accepted:
            code = (await comm.receive_output(timeout=5)).get("code")
        return accepted, code
    finally:
        await comm.disconnect()


@pytest.mark.parametrize("path", ["/zzz", "/ws/threads/", "/ws/threads/abc//", "/ws/inbox/x/", "/"])
async def test_an_unrouted_socket_is_refused_without_a_traceback(path, caplog):
    with caplog.at_level(logging.INFO):
        assert await handshake(path) == (False, CLOSE_NO_SUCH_SOCKET)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    said = [r.getMessage() for r in caplog.records if r.name == "agui_project.sockets"]
    assert said == [f"WebSocket refused on {path!r}: no socket is served there"]


async def test_the_served_paths_still_reach_their_consumers():
    """Anonymous: the consumer itself answers (4401), not the catch-all."""
    assert await handshake("/ws/inbox/") == (True, CLOSE_LOGGED_OUT)
    assert await handshake("/ws/threads/abc/") == (True, CLOSE_LOGGED_OUT)


async def test_a_refused_origin_is_logged_once_per_reason_not_per_attempt(caplog, monkeypatch):
    """A proxy that loses the scheme refuses every socket of every open page, each retrying ~13 times a
    minute: one WARNING says why, the retries are at DEBUG; another reason is said once too."""
    from agui_project import sockets

    monkeypatch.setattr(sockets, "_told", set())

    async def refused(origin):
        comm = WebsocketCommunicator(application, "/ws/inbox/", headers=[(b"host", b"localhost:8000"),
                                                                          (b"origin", origin)])
        try:
            assert (await comm.connect(timeout=5))[0] is False
        finally:
            await comm.disconnect()

    with caplog.at_level(logging.DEBUG, logger="agui_project.sockets"):
        for _ in range(5):
            await refused(b"https://localhost:8000")
        await refused(b"https://evil.example")
    warned = [r.getMessage() for r in caplog.records if r.name == "agui_project.sockets" and r.levelno == logging.WARNING]
    assert len(warned) == 2, warned
    assert "'https://localhost:8000' is neither this site (http://localhost:8000" in warned[0]
    assert "evil.example" in warned[1]
    assert len([r for r in caplog.records if r.name == "agui_project.sockets" and r.levelno == logging.DEBUG]) == 4
