"""Daphne's WebSocket frames go to the kernel when they are sent, not on the reactor's next turn.

Twisted's TCP transport only buffers a write and registers the socket for writability; the data
goes out on the loop's next iteration (twisted/twisted#5303, open since 2011). Each frame then
costs two `epoll_ctl` calls, an extra wake of the loop and the reactor's dispatch. A chat read by
500 sockets sends 500 frames per batch of events, so that cost is most of Daphne's CPU per frame
beyond the `send` itself (py-spy of the fan-out bench).

Here a write to a connection with Nagle's algorithm off (autobahn turns it off for every
WebSocket), with nothing already waiting in Twisted's buffer, is sent at once; what the kernel
does not take goes to Twisted's buffer as before, and while anything is buffered later writes
queue behind it. A connection with Nagle on (Daphne's plain HTTP responses) keeps Twisted's
coalescing of small writes: writing each at once there would send headers and body as separate
segments and meet delayed ACKs. TLS, a pull producer and a closing connection also take
Twisted's own path.
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
        if (self._no_delay and type(data) is bytes and data and not self.TLS
                and self.connected and not self.disconnecting and not self._writeDisconnected
                and not self._tempDataBuffer and self.offset == len(self.dataBuffer)
                # a pull producer is asked for more by doWrite, which a write sent here skips; a
                # streaming one (the HTTPChannel Daphne upgraded from) is paused and resumed only
                # around buffered bytes, which Twisted's own write still handles
                and (self.producer is None or (self.streamingProducer and not self.producerPaused))):
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
