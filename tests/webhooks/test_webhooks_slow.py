"""A receiver that answers a byte at a time: the attempt ends at AGUI_WEBHOOK_TIMEOUT_SECONDS whatever it
does (httpx's timeout bounds each read only), is recorded as a failure and is tried again later."""

import functools
import socket
import ssl
import subprocess
import threading
import time

import httpx
import pytest

from webhooks import services
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\nX-Padding: " + b"p" * 100 + b"\r\n\r\n" + b"x" * 200


def _trickle(server, done, mode, wrap=lambda conn: conn):
    """Accept on `server` until `done`; to each POST (its socket wrapped by `wrap`) answer one byte
    every 0.1 s (30 s for the whole answer), from the status line on or (mode["body"]) after its headers."""
    while not done.is_set():
        try:
            raw, _ = server.accept()
        except OSError:
            return
        try:
            with wrap(raw) as conn:
                conn.recv(65536)
                head, rest = ANSWER.split(b"\r\n\r\n", 1)
                if mode["body"]:
                    conn.sendall(head + b"\r\n\r\n")
                for byte in (rest if mode["body"] else ANSWER):
                    if done.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(0.1)
        except OSError:
            pass


@pytest.fixture
def trickling():
    """A receiver on 127.0.0.1 that reads the POST and then trickles its answer (_trickle)."""
    server = socket.create_server(("127.0.0.1", 0))
    done, mode = threading.Event(), {"body": False}
    threading.Thread(target=_trickle, args=(server, done, mode), daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hook", mode
    done.set()
    server.close()


def _one_attempt(url, settings, monkeypatch, capture):
    """An endpoint at `url` with a 1 s timeout, one delivery made and attempted here: (the delivery,
    the attempt, the seconds the attempt took)."""
    settings.AGUI_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.AGUI_WEBHOOK_TIMEOUT_SECONDS = 1
    monkeypatch.setattr(services, "enqueue", lambda pk, countdown=0: None)  # the test attempts it itself
    services.create_endpoint(url=url, events=[])
    with capture(execute=True):
        delivery, = services.emit("approval.requested", {"id": "r1"}, approval_ref="r1")
    started = time.monotonic()
    attempt = services.deliver(delivery.pk)
    return delivery, attempt, time.monotonic() - started


@pytest.mark.parametrize("body", [False, True], ids=["status-and-headers", "body"])
def test_a_receiver_that_trickles_its_answer_is_cut_at_the_timeout(settings, trickling, monkeypatch, body,
                                                                  django_capture_on_commit_callbacks):
    url, mode = trickling
    mode["body"] = body
    settings.AGUI_WEBHOOK_RESPONSE_BODY_CHARS = 1000
    delivery, attempt, took = _one_attempt(url, settings, monkeypatch, django_capture_on_commit_callbacks)
    assert took < 4
    assert attempt.succeeded is False and attempt.response_status is None
    assert attempt.error == "no complete answer within 1 s"
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.PENDING and delivery.attempts == 1
    assert delivery.claimed_until is None and delivery.next_attempt_at is not None  # tried again later


@pytest.fixture
def trickling_tls(tmp_path):
    """The trickling receiver over TLS (a certificate of its own for 127.0.0.1): its URL and a client
    SSL context that trusts it."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()
    wrap = functools.partial(server_ctx.wrap_socket, server_side=True)
    threading.Thread(target=_trickle, args=(server, done, {"body": False}, wrap), daemon=True).start()
    yield f"https://127.0.0.1:{server.getsockname()[1]}/hook", ssl.create_default_context(cafile=str(cert))
    done.set()
    server.close()


def test_a_receiver_over_tls_that_trickles_its_answer_is_cut_at_the_timeout(settings, trickling_tls, monkeypatch,
                                                                           django_capture_on_commit_callbacks):
    """Over TLS the connection's socket is a new one (the plain socket is detached once wrapped): the
    deadline must shut that one."""
    url, trusted = trickling_tls
    monkeypatch.setattr(services.httpx, "Client", functools.partial(httpx.Client, verify=trusted))  # trusts the test's cert
    _delivery, attempt, took = _one_attempt(url, settings, monkeypatch, django_capture_on_commit_callbacks)
    assert took < 4
    assert attempt.error == "no complete answer within 1 s" and attempt.response_status is None
