"""What every WebSocket of the site shares: the exact-origin check, and closing on logout.

Origin: channels' AllowedHostsOriginValidator compares only the Origin's host with
ALLOWED_HOSTS, so any other web app on the same host (another port, or http beside https)
could open a socket with the user's cookie. As Django's CSRF check does for forms, the Origin
must be the site's own origin (the scheme of the connection, the Host header, its port) or one
of CSRF_TRUSTED_ORIGINS; the Host itself must be an allowed host.

Logout: a socket authenticates once, when it opens. Each socket joins its user's group; Django's
`user_logged_out` is sent to that group with the session that ended, and the sockets opened
with that session close (the user's other browsers keep theirs).

Redis away: a socket whose Redis calls fail (the channel layer's, the thread's stream) closes with
4011 and one warning line; nothing raises into Daphne.
"""

import asyncio
import hashlib
import logging
import random
from time import monotonic
from urllib.parse import urlsplit

import redis
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddleware
from channels.db import aclose_old_connections, database_sync_to_async
from channels.exceptions import StopConsumer
from channels.layers import get_channel_layer
from channels.security.websocket import WebsocketDenier
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware
from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from agui_project import socket_standing
from agui_project.logs import printable

log = logging.getLogger(__name__)

DEFAULT_PORTS = {"http": 80, "https": 443}
CLOSE_LOGGED_OUT = 4401  # the code a socket gets when it opens without a signed-in user
CLOSE_NOT_YOURS = 4403  # a thread that is not the user's, an inbox for someone who reviews nothing
# Redis could not be reached: the pages reconnect with backoff (and get a fresh snapshot). Not
# RFC 6455's 1011: Daphne's autobahn lets an application close only with 1000 or 3000-4999
CLOSE_RETRY = 4011
# the user's access changed (agui_project/access_changes.py): the pages reconnect at once, and the
# handshake decides anew (4401 for an account switched off, the inbox's groups as they are now)
CLOSE_RECHECK = 4012
# a path no socket is served on: refused at the handshake (Daphne answers it with HTTP 403)
CLOSE_NO_SUCH_SOCKET = 4404
# redis-py's errors (channels-redis raises them too); OSError: a socket error it left unwrapped
REDIS_AWAY = (redis.RedisError, OSError)


# --- origin ------------------------------------------------------------------------------------

def _origin(value):
    """(scheme, host, port) of an origin or URL, default ports filled in; None when unusable."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    scheme = (parts.scheme or "").lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _allowed_hosts():
    hosts = settings.ALLOWED_HOSTS
    if settings.DEBUG and not hosts:  # as HttpRequest.get_host
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _secure(scope, headers):
    """wss, or the TLS-terminating proxy's header says https (SECURE_PROXY_SSL_HEADER, as for HTTP)."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, value = proxy
        sent = headers.get(name.removeprefix("HTTP_").lower().replace("_", "-").encode(), "")
        return sent.split(",", 1)[0].strip() == value
    return False


def origin_refusal(scope):
    """None when the socket's Origin is the site's own or a trusted one; else why not, in words an
    operator can act on (the proxy in front is the usual cause: a Host without the public port, or
    no scheme header on the WebSocket path, so that the site takes itself for http://)."""
    headers = {k.lower(): v.decode("latin1") for k, v in scope.get("headers", [])}
    raw = headers.get(b"origin", "").strip()
    origin = _origin(raw)
    if origin is None:  # absent, "null" (sandboxed frames, file://) or not http(s)
        return f"Origin {raw!r} is not an http(s) origin"
    host = headers.get(b"host", "").strip()
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return f"Host {host!r} is not in DJANGO_ALLOWED_HOSTS"
    own = ("https://" if _secure(scope, headers) else "http://") + host
    if origin == _origin(own):
        return None
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" in trusted:  # "https://*.example.com": that scheme, any subdomain (CSRF's own rule)
            parts = urlsplit(trusted)
            if parts.scheme.lower() == origin[0] and is_same_domain(urlsplit(raw).netloc.lower(),
                                                                    parts.netloc.lower().lstrip("*")):
                return None
        elif origin == _origin(trusted):
            return None
    return (f"Origin {raw!r} is neither this site ({own}, from the Host header and "
            f"{_scheme_source()}) nor in DJANGO_CSRF_TRUSTED_ORIGINS")


def _scheme_source():
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy:
        return "the connection's scheme; AGUI_PROXY_SSL_HEADER is not set"
    return f"the connection's scheme or the proxy's {proxy[0].removeprefix('HTTP_').replace('_', '-')} header"


# the reasons this process has logged a refusal for: each is one WARNING, not one per attempt (every
# open page retries about 13 times a minute, so a proxy's mistake wrote thousands of identical lines);
# bounded, since an Origin is anyone's to make up (past it, each refusal is logged as before)
_TOLD_MAX = 256
_told = set()


def tell_refusal(path, refusal):
    path = printable(path)  # the client's, decoded: a CR/LF in it would start a line of its own
    if refusal in _told:
        log.debug("WebSocket refused on %s: %s", path, refusal)
        return
    if len(_told) < _TOLD_MAX:
        _told.add(refusal)
    log.warning("WebSocket refused on %s: %s (said once per process and reason; the pages keep retrying)",
                path, refusal)


class SameOriginValidator:
    """ASGI middleware: refuse a WebSocket whose Origin is not the site's own or a trusted one, and
    say why in the log, once per reason: Daphne's access log shows only WSREJECT, and a proxy that
    loses the scheme or the port makes every socket of the site refused while its pages work."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            refusal = origin_refusal(scope)
            if refusal is not None:
                tell_refusal(scope.get("path", ""), refusal)
                return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)


class SocketSessionMiddleware(SessionMiddleware):
    """channels' SessionMiddleware, its session and user in the scope, without its wrapped send.

    The wrapper saves a changed session on `http.response.start`, which a WebSocket never sends,
    and on every other message still looks at the session (two lazy-object reads) before passing
    it on: on a chat watched by 500 sockets that is paid 500 times per frame of events."""

    async def __call__(self, scope, receive, send):
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def socket_stack(inner):
    """channels' AuthMiddlewareStack (cookies, session, user) for the site's WebSockets."""
    return CookieMiddleware(SocketSessionMiddleware(AuthMiddleware(inner)))


async def no_such_socket(scope, receive, send):
    """The WebSockets' last route: a path no consumer serves (`/zzz`, `/ws/threads/`) is refused at
    its handshake with one INFO line. Without it channels' URLRouter raised ValueError("No route
    found"), which Daphne answered with a 500 and a traceback in the log, per anonymous attempt."""
    message = await receive()
    if message["type"] == "websocket.connect":
        log.info("WebSocket refused on %r: no socket is served there", scope.get("path", "")[:200])
        await send({"type": "websocket.close", "code": CLOSE_NO_SUCH_SOCKET})


# --- logout ------------------------------------------------------------------------------------

def user_group(user_id):
    return f"sockets.user.{user_id}"


def session_tag(session_key):
    """The session, named without its key (the key is a credential; group messages pass Redis)."""
    return hashlib.sha256(f"socket-session:{session_key}".encode()).hexdigest()[:32] if session_key else None


class _LayerFailed:
    """What the channel layer's receive hands to dispatch instead of raising."""

    def __init__(self, error):
        self.error = error


class ClosesWhenRedisIsAway:
    """Mixin for AsyncWebsocketConsumer: a Redis outage closes the socket with 4011, once.

    A socket meets Redis in its handlers (the channel layer's group_add in accept, the inbox's groups,
    the thread's watcher and stream) and in channels' own loop, which waits on the channel layer
    beside the client. An error escaping any of them is Daphne's "Exception inside application":
    a 500 for a socket still opening, a 1011 (refused by autobahn) for an open one. Here it is one
    warning and a 4011 close, accepted first if the handshake was still open so that the page sees
    a code; the consumer then waits for the client's answer and ends as any closed socket does.
    """

    _accepted = _closed = False
    _redis_away = None  # the error that closed the socket

    async def accept(self, subprotocol=None, headers=None):
        await super().accept(subprotocol, headers)
        self._accepted = True

    async def close(self, code=None, reason=None):
        self._closed = True
        await super().close(code, reason)

    async def close_for_redis_away(self, error):
        """Also for a consumer's own tasks (the thread socket's stream pump)."""
        if self._redis_away is not None:
            return
        self._redis_away = error
        if self._closed:  # refused or closing already: the outage changes nothing for the page
            return
        log.warning("socket %s: Redis unreachable (%s: %s), closed with %s", printable(self.scope.get("path", "")),
                    type(error).__name__, error, CLOSE_RETRY)
        if not self._accepted:
            await super().accept()  # the frame alone: a signed-in socket's group_add would fail again
            self._accepted = True
        await self.close(code=CLOSE_RETRY)

    async def dispatch(self, message):
        if isinstance(message, _LayerFailed):
            await self.close_for_redis_away(message.error)
            return
        if self._redis_away is not None and message["type"] != "websocket.disconnect":
            return  # closing: a connect still queued, frames and group messages in flight
        try:
            await super().dispatch(message)
        except REDIS_AWAY as exc:
            await self.close_for_redis_away(exc)

    # channels' AsyncConsumer.__call__ sets `channel_receive` and waits on it beside the client,
    # outside any handler: its error would end the consumer there, so it comes to dispatch instead
    @property
    def channel_receive(self):
        return self._channel_receive_or_failure

    @channel_receive.setter
    def channel_receive(self, receive):
        self._layer_receive = receive

    async def _channel_receive_or_failure(self):
        if self._redis_away is None:
            try:
                return await self._layer_receive()
            except REDIS_AWAY as exc:
                return _LayerFailed(exc)
        await asyncio.Future()  # closed: nothing more from the layer (cancelled when the consumer ends)

    async def websocket_disconnect(self, message):
        # each group left on its own, and disconnect() (the consumer's cleanup, e.g. its stream
        # pump) run even if Redis is away; memberships left behind expire in the layer
        groups, self.groups = self.groups, []
        failed = None
        try:
            for group in groups:
                try:
                    await self.channel_layer.group_discard(group, self.channel_name)
                except REDIS_AWAY as exc:
                    failed = failed or exc
            try:
                await super().websocket_disconnect(message)  # disconnect(), then StopConsumer
            except REDIS_AWAY as exc:
                failed = failed or exc
                await aclose_old_connections()
                raise StopConsumer() from None
        finally:
            if failed is not None:  # a warning only if no outage had closed the socket (it had its own)
                log.log(logging.INFO if self._redis_away is not None else logging.WARNING,
                        "socket %s: left without Redis (%s: %s)", self.scope.get("path"), type(failed).__name__, failed)


# how often an open socket joins its channel-layer groups again: channels_redis drops a membership
# after its group_expiry (a day), and an emptied Redis (FLUSHALL) drops them all at once; the socket
# stays open and hears nothing (no inbox notice, no logout) unless it joins again
REJOIN_SECONDS = 300.0
# how often it asks whether its user may still hear it (socket_standing.py): about as soon as the
# beat's sweep finds an account switched off without a signal (agents/account_off.py)
STANDING_SECONDS = 30.0


class SignedInSocket(ClosesWhenRedisIsAway):
    """Mixin for AsyncWebsocketConsumer: the socket lives as long as the session it opened with
    (and, as every socket of the site, closes when Redis is away)."""

    _signed_out = False
    _rejoining = None
    # the user's groups the socket heard for (the inbox's, read as it joined them), else as its standing
    # was first read: a change closes it (4012)
    _group_ids = None

    def memberships(self):
        """The channel-layer groups this socket hears on (a consumer with groups of its own adds them)."""
        return list(self.groups)

    async def _keep_memberships(self):
        joined = monotonic()
        while True:
            # spread: sockets opened together (a page's reconnect after a restart) do not ask together
            await asyncio.sleep(min(REJOIN_SECONDS, STANDING_SECONDS) * random.uniform(0.8, 1.2))
            if self._closed or await self._standing_lost():
                return
            if monotonic() - joined < REJOIN_SECONDS:
                continue
            joined = monotonic()
            try:
                for group in self.memberships():
                    await self.channel_layer.group_add(group, self.channel_name)
            except REDIS_AWAY as exc:
                await self.close_for_redis_away(exc)
                return

    async def websocket_disconnect(self, message):
        if self._rejoining is not None:
            self._rejoining.cancel()
        await super().websocket_disconnect(message)

    async def _standing_lost(self):
        """Closes the socket when its session ended or its user lost access unannounced
        (socket_standing.py); True when it did."""
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return False
        session_key = getattr(self.scope.get("session"), "session_key", None)
        try:
            ended, groups = await database_sync_to_async(socket_standing.standing)(user.pk, session_key)
        except Exception as exc:  # noqa: BLE001  (the database away: asked again next time; the socket stays)
            log.info("socket %s: its standing could not be read (%s)", printable(self.scope.get("path", "")), exc)
            return False
        if ended is None and self._group_ids in (None, groups):
            self._group_ids = groups
            return False
        code = CLOSE_LOGGED_OUT if ended == socket_standing.SESSION else CLOSE_RECHECK
        self._signed_out = True  # frames in flight are dropped, as after a logout
        await self.close(code=code)
        await self.disconnect(code)
        return True

    def _session_tag(self):
        session = self.scope.get("session")
        return session_tag(getattr(session, "session_key", None))

    async def accept(self, subprotocol=None, headers=None):
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            group = user_group(user.pk)
            self.groups = [*self.groups, group]  # websocket_disconnect leaves it
            await self.channel_layer.group_add(group, self.channel_name)
        await super().accept(subprotocol, headers)
        if self._rejoining is None and not self._closed:
            self._rejoining = asyncio.create_task(self._keep_memberships())

    async def refuse(self, code):
        """Close with `code` where the page can read it. Closed before it is accepted, a socket fails
        its handshake (Daphne answers HTTP 403) and a browser sees only 1006, "abnormal closure":
        the chat page kept retrying, "Reconnecting…", and never said to sign in again."""
        await self.accept()
        await self.close(code=code)

    async def websocket_receive(self, message):
        if self._signed_out or self._closed:  # frames already in flight when the session ended or it was refused
            return
        await super().websocket_receive(message)

    async def session_ended(self, message):
        """Channel-layer message from the logout receiver below."""
        if message.get("session") in (None, self._session_tag()):
            self._signed_out = True
            await self.close(code=CLOSE_LOGGED_OUT)
            await self.disconnect(CLOSE_LOGGED_OUT)  # stop its work now (a stream pump), not when the peer answers

    async def access_changed(self, message):
        """Channel-layer message from agui_project/access_changes.py: the user was switched off,
        given a new password or moved between groups since this socket authenticated."""
        self._signed_out = True  # frames in flight are dropped, as after a logout
        await self.close(code=CLOSE_RECHECK)
        await self.disconnect(CLOSE_RECHECK)


@receiver(user_logged_out)
def close_sockets_of_session(sender, request, user, **kwargs):
    if user is None:
        return
    session = getattr(request, "session", None)
    message = {"type": "session.ended", "session": session_tag(getattr(session, "session_key", None))}
    try:
        async_to_sync(get_channel_layer().group_send)(user_group(user.pk), message)
    except Exception as exc:  # the logout itself stands; open sockets then live until they close
        log.warning("logout of user %s: could not tell their open sockets: %r", user.pk, exc)
