"""Daphne's transport sends a WebSocket frame when it is written (agui_project/twisted_writes.py):
a real loopback TCP connection under Twisted's tcp.Connection, the reactor a MemoryReactor that
only records which sockets wait to be written."""

import select
import socket
import time

import pytest
from twisted.internet import tcp
from twisted.internet.protocol import Protocol
from twisted.internet.testing import MemoryReactor

from agui_project import twisted_writes


@pytest.fixture
def conn():
    assert twisted_writes.install()
    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    reactor = MemoryReactor()
    connection = tcp.Connection(server, Protocol(), reactor)
    connection.connected = True
    peer.settimeout(5)
    yield connection, peer, reactor
    peer.close()
    server.close()


def waiting(peer):
    """What has reached the peer already, without blocking."""
    peer.setblocking(False)
    try:
        return peer.recv(1 << 20)
    except BlockingIOError:
        return b""
    finally:
        peer.settimeout(5)


def test_with_nagle_off_a_write_reaches_the_peer_without_the_reactor(conn):
    connection, peer, reactor = conn
    connection.setTcpNoDelay(True)
    connection.write(b"frame")
    assert peer.recv(100) == b"frame"
    assert connection not in reactor.getWriters()


def test_with_nagle_on_writes_keep_twisteds_buffer(conn):
    connection, peer, reactor = conn
    connection.setTcpNoDelay(False)
    connection.write(b"head")
    connection.write(b"body")
    assert waiting(peer) == b""
    assert connection in reactor.getWriters()
    connection.doWrite()
    assert peer.recv(100) == b"headbody"


def test_what_the_kernel_does_not_take_is_buffered_and_later_writes_keep_their_order(conn):
    connection, peer, reactor = conn
    connection.setTcpNoDelay(True)
    big = bytes(range(256)) * 16_384  # 4 MiB: one send takes at most SEND_LIMIT (128 KiB) of it
    connection.write(big)
    received = bytearray(peer.recv(1 << 20))
    assert len(received) < len(big)
    assert connection in reactor.getWriters()  # the rest waits for writability
    connection.write(b"tail")  # must not overtake what is buffered
    deadline = time.monotonic() + 10
    while len(received) < len(big) + 4 and time.monotonic() < deadline:
        if connection in reactor.getWriters():
            connection.doWrite()  # what the reactor does when the socket can take more
        if select.select([peer], [], [], 0.05)[0]:
            received += peer.recv(1 << 20)
    assert bytes(received) == big + b"tail"


def test_a_closing_connection_writes_through_twisted(conn):
    connection, peer, reactor = conn
    connection.setTcpNoDelay(True)
    connection.disconnecting = True
    connection.write(b"last")
    assert waiting(peer) == b""
    assert connection in reactor.getWriters()


def test_install_is_idempotent():
    write = tcp.Connection.write
    assert twisted_writes.install()
    assert tcp.Connection.write is write


class Streaming:
    def pauseProducing(self):
        pass

    def resumeProducing(self):
        pass

    def stopProducing(self):
        pass


def test_a_streaming_producer_does_not_stop_writes_going_out_but_a_pull_producer_does(conn):
    connection, peer, reactor = conn
    connection.setTcpNoDelay(True)
    connection.registerProducer(Streaming(), True)  # as Daphne's HTTPChannel stays, after the upgrade
    connection.write(b"frame")
    assert peer.recv(100) == b"frame"
    connection.unregisterProducer()
    connection.registerProducer(Streaming(), False)  # asks for more when the buffer empties (doWrite)
    connection.write(b"chunk")
    assert waiting(peer) == b""
    assert connection in reactor.getWriters()
