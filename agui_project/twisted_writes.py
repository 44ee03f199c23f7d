"""Daphne's WebSocket frames go to the kernel when they are sent, not on the reactor's next turn.

Twisted's TCP transport only buffers a write and registers the socket for writability; the data
goes out on the loop's next iteration (twisted/twisted#5303, open since 2011). Each frame then
costs two `epoll_ctl` calls, an extra wake of the loop and the reactor's dispatch. A chat read by
500 sockets sends 500 frames per batch of events, so that cost is most of Daphne's CPU per frame
beyond the `send` itself (py-spy of the fan-out bench).

Here a write to a connection with Nagle's algorithm off (autobahn turns it off for every
WebSocket), with nothing already waiting in Twisted's buffer, is sent at once; what the kernel
does not take goes to Twisted's buffer as before, and while anything is buffered later writes
queue behind it. A connection with Nagle on keeps Twisted's coalescing of small writes. TLS, a
pull producer and a closing connection also take Twisted's own path.

Daphne's HTTP responses write through Twisted's buffered `writeSequence` (the headers, each chunk):
`send_buffered(connection)`, called at the end of each reply (agui_project/daphne_http.py), sends
what the reply buffered at once, in one `send`, under the same conditions.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def install() -> bool:
    """Patch twisted.internet.tcp.Connection once; False when Twisted is not there or differs."""
    try:
        from twisted.internet import tcp
    except ImportError:
        return False
    connection = tcp.Connection
    if getattr(connection, "_sends_at_once", False):
        return True
    if not all(hasattr(connection, name) for name in ("write", "setTcpNoDelay", "getTcpNoDelay", "writeSomeData")):
        log.warning("twisted.internet.tcp.Connection has changed: WebSocket frames keep Twisted's buffered writes")
        return False
    buffered_write, set_no_delay = connection.write, connection.setTcpNoDelay

    def setTcpNoDelay(self, enabled):
        set_no_delay(self, enabled)
        try:  # Twisted ignores a failed setsockopt: read back what the socket has
            self._no_delay = self.getTcpNoDelay()
        except OSError:
            self._no_delay = False

    def write(self, data):
        if type(data) is bytes and data and not self._tempDataBuffer and _sends_now(self):
            sent = self.writeSomeData(data)  # an int, or the error that doWrite will meet and report
            if isinstance(sent, int) and sent > 0:
                if sent == len(data):
                    return
                data = bytes(memoryview(data)[sent:])
        buffered_write(self, data)

    connection._no_delay = False
    connection.setTcpNoDelay, connection.write = setTcpNoDelay, write
    connection._sends_at_once = True
    return True


def _sends_now(connection):
    """Whether bytes for `connection` may go to the kernel now rather than on the reactor's turn."""
    return (connection._no_delay and not connection.TLS and connection.connected
            and not connection.disconnecting and not connection._writeDisconnected
            and connection.offset == len(connection.dataBuffer)
            # a pull producer is asked for more by doWrite, which a write sent here skips; a
            # streaming one (an HTTPChannel) is paused and resumed only around buffered bytes,
            # which Twisted's own write still handles
            and (connection.producer is None or (connection.streamingProducer and not connection.producerPaused)))


def send_buffered(connection):
    """Send what `connection` (a patched tcp.Connection, or anything else: then nothing) holds in
    Twisted's buffer now, in one `send`, when it has Nagle off and nothing of it is half sent; the
    reactor's turn then has nothing to do and the socket is no longer watched for writability.
    What the kernel does not take, or an error, stays with the reactor as before."""
    if not getattr(connection, "_sends_at_once", False) or not connection._tempDataBuffer or not _sends_now(connection):
        return
    data = b"".join(connection._tempDataBuffer)
    connection._tempDataBuffer, connection._tempDataLen = [], 0
    sent = connection.writeSomeData(data)
    if isinstance(sent, int) and sent == len(data):
        connection.dataBuffer, connection.offset = b"", 0
        connection.stopWriting()
        return
    # partly sent, or an error that doWrite meets again and reports: the reactor still watches it
    connection.dataBuffer, connection.offset = (bytes(memoryview(data)[sent:]) if isinstance(sent, int) else data), 0
