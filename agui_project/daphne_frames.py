"""One frame for many WebSockets, framed once: autobahn's prepared messages, reached under Daphne.

A chat followed by 500 sockets sends each batch of its events 500 times. Through ASGI every send
is a message of its own down channels, Daphne (Server.handle_reply, WebSocketProtocol.serverSend)
and autobahn (sendMessage, sendFrame: the text encoded and framed again for each socket): about
45 µs a socket here, under half of it the `send` system call. autobahn has an API for exactly this
(prepareMessage / sendPreparedMessage: the same payload framed once, then written to each
connection), which an ASGI application cannot name. Daphne's `send` for a WebSocket is
functools.partial(Server.handle_reply, protocol), so the protocol is at hand: `direct(send)` finds
it, and a prepared frame goes that way only while Daphne would send it itself (its connection,
open, the frame within its message size limit). Any other case, and every other server (channels'
in-memory communicator in the tests), takes the ASGI send, which writes the same bytes.

`install()` (asgi.py, Daphne's process) also stops autobahn building its per-frame debug line's
arguments (click colours of a function name, the peer and a length, 3.5 µs a frame) when the line
is not written: they are formatted when it is; and `close_with_a_code()` has Daphne's sockets fail
with a close frame saying why.
"""

from __future__ import annotations

import functools
import logging
import sys

from autobahn.websocket.protocol import PreparedMessage, WebSocketProtocol

log = logging.getLogger(__name__)


def prepare(text):
    """A text frame to send on any number of sockets (a server's frames are not masked; a socket
    that negotiated compression compresses it itself)."""
    return PreparedMessage(text.encode(), False, False, False)


class Direct:
    """Sends prepared frames to one Daphne WebSocket, as Daphne's own send would."""

    __slots__ = ("server", "protocol")

    def __init__(self, server, protocol):
        self.server, self.protocol = server, protocol

    def __call__(self, prepared):
        """True once sent; False when Daphne would not send it as it is (the socket is not open, no
        longer Daphne's connection, or the frame is over its message size limit): the caller's ASGI
        send then does what Daphne does."""
        protocol = self.protocol
        if protocol.state != protocol.STATE_OPEN or 0 < protocol.maxMessagePayloadSize < len(prepared.payload):
            return False
        connection = self.server.connections.get(protocol)
        if connection is None or connection.get("disconnected"):
            return False
        protocol.sendPreparedMessage(prepared)
        return True


def _daphne_server():
    """Daphne's Server class when this process runs Daphne, else None. Looked up, not imported:
    importing daphne.server installs Twisted's asyncio reactor."""
    return getattr(sys.modules.get("daphne.server"), "Server", None)


def direct(send):
    """A Direct for the socket behind an ASGI WebSocket `send` when that is Daphne's reply path,
    else None."""
    Server = _daphne_server()
    if Server is None or type(send) is not functools.partial or len(send.args) != 1 or send.keywords:
        return None
    # a method bound to a Server (Daphne's handle_reply, not overridden): its __self__ is that Server
    if getattr(send.func, "__func__", None) is not Server.handle_reply or not isinstance(send.args[0], WebSocketProtocol):
        return None
    return Direct(send.func.__self__, send.args[0])


class _Formatted:
    """A debug line's argument, formatted only when the line is written."""

    __slots__ = ("_fn", "_args")

    def __init__(self, fn, *args):
        self._fn, self._args = fn, args

    def __str__(self):
        return self._fn(*self._args)

    def __format__(self, spec):
        return format(str(self), spec)

    __repr__ = __str__


def install():
    """Patch autobahn's WebSocket protocol module once; False when autobahn is not there or differs."""
    try:
        from autobahn import util
        from autobahn.websocket import protocol
    except ImportError:
        return False
    if getattr(protocol, "_formats_debug_lazily", False):
        return True
    if protocol.hltype is not util.hltype or protocol.hlval is not util.hlval:
        log.warning("autobahn's protocol module has changed: its debug lines' arguments stay eager")
        return False
    protocol.hltype = lambda obj: _Formatted(util.hltype, obj)
    protocol.hlval = lambda val, color="white", bold=True: _Formatted(util.hlval, val, color, bold)
    protocol._formats_debug_lazily = True
    return True


def close_with_a_code():
    """Daphne's WebSockets fail with a close frame that says why (RFC 6455 7.4.1: 1009 for a message
    over Daphne's size limit, 1002 for a protocol error), then close, instead of autobahn's default
    (failByDrop): the TCP connection dropped, so a client that sent too big a frame got 1006 alone."""
    try:
        from daphne.ws_protocol import WebSocketFactory
    except ImportError:
        return False
    if getattr(WebSocketFactory, "_closes_with_a_code", False):
        return True
    init = WebSocketFactory.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.setProtocolOptions(failByDrop=False)

    WebSocketFactory.__init__ = __init__
    WebSocketFactory._closes_with_a_code = True
    return True
