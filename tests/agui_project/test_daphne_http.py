"""Daphne's HTTP requests under agui_project/daphne_http.py: the body is left to the application,
and a reply's bytes reach the client as the reply is made. Daphne's own HTTP channel and request
over a real loopback TCP connection (Twisted's tcp.Server); the reactor is a MemoryReactor,
which only records the sockets waiting to be written, and the server a stand-in that keeps the
ASGI messages Daphne would give the application."""

import json
import socket

import pytest
from daphne.http_protocol import HTTPFactory
from twisted.internet import tcp
from twisted.internet.testing import MemoryReactor

from agui_project import daphne_http, twisted_writes
from tests.agui_project.test_twisted_writes import waiting


class Server:
    """What Daphne's WebRequest asks of its server."""

    application_close_timeout = 10
    http_timeout = None
    proxy_forwarded_address_header = None
    request_buffer_size = 8192
    root_path = ""
    server_name = "daphne"
    action_logger = None

    def __init__(self):
        self.connections, self.requests, self.received = {}, [], []

    def protocol_connected(self, protocol):
        self.connections[protocol] = {}

    def protocol_disconnected(self, protocol):
        self.connections[protocol]["disconnected"] = True

    def create_application(self, protocol, scope):
        self.requests.append((protocol, scope))
        return self  # the application's queue

    def put_nowait(self, message):
        self.received.append(message)


@pytest.fixture
def http():
    assert twisted_writes.install() and daphne_http.install()
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    listener.close()
    accepted.setblocking(False)
    server, reactor = Server(), MemoryReactor()
    protocol = HTTPFactory(server).buildProtocol(accepted.getpeername())
    connection = tcp.Server(accepted, protocol, accepted.getpeername(), None, 1, reactor)
    protocol.makeConnection(connection)
    client.settimeout(5)
    yield server, protocol, connection, client, reactor
    client.close()
    accepted.close()


def post(protocol, body, content_type):
    protocol.dataReceived(b"POST /agui/banking/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + content_type
                          + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def test_a_form_body_goes_to_the_application_unparsed(http):
    server, protocol, _connection, _client, _reactor = http
    post(protocol, b"a=1&b=2", b"application/x-www-form-urlencoded")
    [(request, scope)] = server.requests
    assert request.args == {}  # Twisted's parse of it: never read by Daphne
    assert scope["method"] == "POST" and scope["path"] == "/agui/banking/"
    assert server.received == [{"type": "http.request", "body": b"a=1&b=2", "more_body": False}]


def test_a_multipart_body_twisted_cannot_parse_still_reaches_the_application(http):
    server, protocol, _connection, client, _reactor = http
    body = b"--nope\r\nthis is not a part"
    post(protocol, body, b"multipart/form-data; boundary=x")
    assert waiting(client) == b""  # Twisted answered 400 and hung up itself before
    [(_request, _scope)] = server.requests
    assert server.received[0]["body"] == body  # the application decides what it makes of it


def test_a_replys_bytes_reach_the_client_as_it_is_made_headers_and_first_chunk_together(http):
    server, protocol, connection, client, reactor = http
    post(protocol, json.dumps({"threadId": "t"}).encode(), b"application/json")
    [(request, _scope)] = server.requests
    request.handle_reply({"type": "http.response.start", "status": 200,
                          "headers": [(b"content-type", b"text/event-stream")]})
    assert connection.getTcpNoDelay()  # so that each event goes out without waiting for an ACK
    assert waiting(client) == b""  # nothing to send before the body
    request.handle_reply({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    first = client.recv(1 << 16)  # one segment: the headers and the first chunk
    assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b"\r\n\r\n9\r\ndata: 1\n\n\r\n")
    assert connection not in reactor.getWriters()  # nothing left for the reactor's turn
    request.handle_reply({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": True})
    assert client.recv(1 << 16) == b"9\r\ndata: 2\n\n\r\n"
    request.handle_reply({"type": "http.response.body", "body": b"", "more_body": False})
    assert client.recv(1 << 16) == b"0\r\n\r\n"
    assert connection not in reactor.getWriters()


def test_what_is_half_sent_keeps_the_rest_behind_it(http):
    server, protocol, connection, client, reactor = http
    post(protocol, b"{}", b"application/json")
    [(request, _scope)] = server.requests
    request.handle_reply({"type": "http.response.start", "status": 200, "headers": []})
    connection.dataBuffer, connection.offset = b"earlier", 0  # bytes the kernel has not taken yet
    connection.startWriting()
    request.handle_reply({"type": "http.response.body", "body": b"later", "more_body": True})
    assert waiting(client) == b""
    assert connection in reactor.getWriters()
    connection.doWrite()  # the reactor's turn: in order
    assert client.recv(1 << 16).startswith(b"earlierHTTP/1.1 200 OK")


def test_with_nagle_on_a_reply_waits_for_the_reactor(http):
    server, protocol, connection, client, reactor = http
    post(protocol, b"{}", b"application/json")
    [(request, _scope)] = server.requests
    connection.setTcpNoDelay(True)
    request.handle_reply({"type": "http.response.start", "status": 200, "headers": []})
    connection.setTcpNoDelay(False)  # turned on again after the response's start
    request.handle_reply({"type": "http.response.body", "body": b"x", "more_body": True})
    assert waiting(client) == b""
    assert connection in reactor.getWriters()


def test_install_is_idempotent():
    from daphne.http_protocol import WebRequest

    assert daphne_http.install()
    reply = WebRequest.handle_reply
    assert daphne_http.install()
    assert WebRequest.handle_reply is reply
