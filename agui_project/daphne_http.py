"""Daphne's HTTP requests leave their bodies to the application.

Twisted's http.Request parses a POST body whose Content-Type is a form (urlencoded or multipart)
into `request.args` as it arrives, and to find out whether it is one it parses every POST's
Content-Type with the stdlib's email package, which builds a new header class on each call: about
0.1 ms of every POST here before Daphne sees the request (0.2-0.3 ms over a socket, traced). Daphne
never reads `args`: it hands the raw body to the ASGI application, where Django parses it (only
when asked). Twisted has a switch for exactly this, `parsePOSTFormSubmission` (twisted.web.server's
Site can turn it off); Daphne builds its requests without using it. Off, a multipart upload is also no
longer parsed into memory twice, nor refused by Twisted before Django sees it.

Each reply's bytes go to the kernel as the reply is made (twisted_writes.send_buffered), in one
`send` for what the reply wrote (the headers and the first chunk together), instead of on the
reactor's next turn, which waits behind whatever else the loop is doing (0.06-0.5 ms a frame of an
SSE stream, traced). For that the connection has Nagle's algorithm off, as asyncio gives every TCP
connection (uvicorn's among them): with it on, an SSE stream's next small event would wait for the
client's ACK of the last one.
"""

from __future__ import annotations

import logging

from agui_project import twisted_writes

log = logging.getLogger(__name__)


def install() -> bool:
    """Patch Daphne's WebRequest once; False when Daphne or Twisted differ from what this expects."""
    try:
        from daphne.http_protocol import WebRequest
        from twisted.web import http
    except ImportError:
        return False
    if getattr(WebRequest, "_leaves_forms", False):
        return True
    if "parsePOSTFormSubmission" not in http.Request.__init__.__code__.co_varnames:
        log.warning("twisted.web.http.Request has changed: Twisted still parses Daphne's POST bodies")
        return False
    init, reply = WebRequest.__init__, WebRequest.handle_reply

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("parsePOSTFormSubmission", False)
        init(self, *args, **kwargs)

    def handle_reply(self, message):
        transport = None if self.finished or self.channel is None else self.channel.transport
        if transport is not None and message.get("type") == "http.response.start" \
                and getattr(transport, "_sends_at_once", False) and not transport._no_delay:
            transport.setTcpNoDelay(True)
        reply(self, message)
        if transport is not None:
            twisted_writes.send_buffered(transport)

    WebRequest.__init__, WebRequest.handle_reply = __init__, handle_reply
    WebRequest._leaves_forms = True
    return True
