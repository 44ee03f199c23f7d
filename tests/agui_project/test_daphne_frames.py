"""A batch of a thread's events framed once for all its Daphne sockets (agui_project/daphne_frames.py,
agents/consumers.py): Daphne's own Server and WebSocketProtocol, not running, each socket's bytes
caught by a Twisted StringTransport."""

import asyncio
import functools
import time

import pytest
from autobahn import util
from autobahn.websocket import protocol as autobahn_protocol
from daphne.server import Server
from daphne.ws_protocol import WebSocketFactory
from twisted.internet.testing import StringTransport

from agents import consumers
from agents.runtime import events
from agui_project import daphne_frames


def daphne_server():
    server = Server(application=None, endpoints=["tcp:port=0:interface=127.0.0.1"])  # never run
    server.connections = {}  # what Server.run() sets up
    return server


def daphne_socket(server):
    """An accepted WebSocket of `server`, as Daphne holds it: (its ASGI send, what it wrote)."""
    socket = WebSocketFactory(server, server=server).buildProtocol(("127.0.0.1", 1))
    socket.server, socket.client_addr = server, ["127.0.0.1", 1]
    written = StringTransport()
    socket.makeConnection(written)
    socket.state = socket.STATE_OPEN  # the handshake done, as serverAccept leaves it
    socket.inside_message, socket.current_frame = False, None
    server.connections[socket] = {"connected": time.time()}
    return functools.partial(server.handle_reply, socket), written


TEXTS = ["héllo", "x" * 300, "y" * 70_000]  # the three lengths a frame header can encode


@pytest.mark.parametrize("text", TEXTS, ids=["short", "16-bit length", "64-bit length"])
def test_a_prepared_frame_is_the_bytes_daphnes_own_send_writes(text):
    server = daphne_server()
    own_send, own = daphne_socket(server)
    asyncio.run(own_send({"type": "websocket.send", "text": text}))
    send, written = daphne_socket(server)
    assert daphne_frames.direct(send)(daphne_frames.prepare(text)) is True
    assert written.value() == own.value() != b""


def test_a_socket_daphne_would_not_send_on_is_left_to_the_asgi_send():
    server = daphne_server()
    send, written = daphne_socket(server)
    direct, frame = daphne_frames.direct(send), daphne_frames.prepare("x")
    socket = send.args[0]
    socket.state = socket.STATE_CLOSING
    assert direct(frame) is False
    socket.state = socket.STATE_OPEN
    server.connections[socket]["disconnected"] = time.time()
    assert direct(frame) is False
    del server.connections[socket]
    assert direct(frame) is False
    assert written.value() == b""


def test_a_frame_over_daphnes_message_size_limit_is_left_to_the_asgi_send():
    server = daphne_server()
    send, written = daphne_socket(server)
    socket = send.args[0]
    socket.maxMessagePayloadSize = 10  # Daphne's --websocket_max_message_size
    assert daphne_frames.direct(send)(daphne_frames.prepare("x" * 11)) is False
    assert daphne_frames.direct(send)(daphne_frames.prepare("x" * 10)) is True
    assert written.value() == b"\x81\x0a" + b"x" * 10


def test_a_message_over_daphnes_size_limit_is_answered_with_1009_not_a_dropped_connection():
    """autobahn fails a socket by dropping its TCP connection (failByDrop): the client heard 1006
    alone. It now gets a close frame with the code and the reason, as RFC 6455 asks."""
    assert daphne_frames.close_with_a_code()
    server = daphne_server()
    send, written = daphne_socket(server)
    socket = send.args[0]
    socket.maxMessagePayloadSize = 10  # Daphne's --websocket_max_message_size
    mask, payload = b"\x01\x02\x03\x04", b"x" * 11
    socket.dataReceived(b"\x81" + bytes([0x80 | len(payload)]) + mask
                        + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    sent = written.value()
    assert sent[:1] == b"\x88" and int.from_bytes(sent[2:4], "big") == 1009, sent
    assert b"exceeds" in sent[4:] and socket.state == socket.STATE_CLOSING


def test_only_daphnes_reply_path_is_written_directly():
    server = daphne_server()
    send, _ = daphne_socket(server)

    async def other_send(message):
        pass

    assert daphne_frames.direct(send) is not None
    assert daphne_frames.direct(other_send) is None
    assert daphne_frames.direct(functools.partial(other_send)) is None
    assert daphne_frames.direct(functools.partial(server.handle_reply, object())) is None


def test_every_socket_of_a_shared_read_gets_the_batch_framed_once(monkeypatch):
    """Three sockets, one batch: each gets the frames Daphne's own send would write, and each
    frame was prepared once, not once a socket."""
    payloads = ['{"type":"RUN_STARTED"}', '{"type":"TEXT_MESSAGE_START"}', '{"type":"RUN_FINISHED"}']
    batch = events.Batch((f"1-{i}", p) for i, p in enumerate(payloads))
    server = daphne_server()
    own_send, own = daphne_socket(server)
    for text in consumers.frames(payloads):
        asyncio.run(own_send({"type": "websocket.send", "text": text}))
    prepared = []
    monkeypatch.setattr(daphne_frames, "prepare", lambda text, made=daphne_frames.prepare: prepared.append(text) or made(text))
    sockets = []
    for _ in range(3):
        send, written = daphne_socket(server)
        consumer = consumers.ThreadConsumer()
        consumer.base_send, consumer.direct = send, daphne_frames.direct(send)
        sockets.append((consumer, written))

    for consumer, _written in sockets:
        assert consumer._deliver(consumer.pump, batch)
    assert [written.value() for _c, written in sockets] == [own.value()] * 3
    assert prepared == list(consumers.frames(payloads))


def test_a_socket_closed_mid_batch_gets_the_rest_through_the_asgi_send(monkeypatch):
    server = daphne_server()
    send, written = daphne_socket(server)
    socket, direct = send.args[0], daphne_frames.direct(send)
    monkeypatch.setattr(consumers, "FRAME_MAX_CHARS", 10)  # one frame an event
    batch = events.Batch([("1-0", '"first one"'), ("1-1", '"second one"')])
    through_asgi = []

    async def asgi_send(message):
        through_asgi.append(message)

    def closes_after_one(frame):
        sent = direct(frame)
        socket.state = socket.STATE_CLOSED
        return sent

    consumer = consumers.ThreadConsumer()
    consumer.base_send, consumer.direct = asgi_send, closes_after_one
    assert consumer._deliver(consumer.pump, batch) is False and consumer.rest == (batch, 1)
    asyncio.run(consumer._send_batch(*consumer.rest))
    assert written.value().endswith(b'"first one"')
    assert through_asgi == [{"type": "websocket.send", "text": '"second one"'}]


def test_a_batch_goes_to_the_pump_now_reading_and_never_from_one_a_resume_replaced():
    """A shared read hands its batch to each follower as it arrives (ThreadConsumer._deliver); a
    pump that a resume cancelled may not have left its read yet: it sends nothing and stops
    following. The current pump's frames go once, with nothing left over for its ASGI send."""
    server = daphne_server()
    send, written = daphne_socket(server)
    consumer = consumers.ThreadConsumer()
    consumer.base_send, consumer.direct = send, daphne_frames.direct(send)
    batch = events.Batch([("1-0", '"late"')])
    replaced, consumer.pump = object(), object()
    before = written.value()
    assert consumer._deliver(replaced, batch) is False
    assert written.value() == before and consumer.rest is None
    assert consumer._deliver(consumer.pump, batch) is True
    assert written.value().endswith(b'"late"') and written.value().count(b'"late"') == 1
    assert consumer.rest is None


def test_autobahns_debug_arguments_are_formatted_only_when_written(monkeypatch):
    assert daphne_frames.install()
    send, written = daphne_socket(daphne_server())
    socket = send.args[0]
    calls = []
    monkeypatch.setattr(util, "hl", lambda text, bold=False, color="yellow": calls.append(text) or str(text))
    socket.sendData(b"frame")  # its debug line is off
    assert written.value() == b"frame" and calls == []
    func, length = autobahn_protocol.hltype(socket.sendData), autobahn_protocol.hlval(5)
    assert calls == []
    line = f"{func} sent {length} bytes"  # as the logger formats a line it writes
    assert calls and line == f"{util.hltype(socket.sendData)} sent {util.hlval(5)} bytes"
