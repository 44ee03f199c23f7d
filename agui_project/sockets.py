"""What every WebSocket of the site shares: the exact-origin check, and closing on logout.

Origin: channels' AllowedHostsOriginValidator compares only the Origin's host with
ALLOWED_HOSTS, so any other web app on the same host (another port, or http beside https)
could open a socket with the user's cookie. As Django's CSRF check does for forms, the Origin
must be the site's own origin (the scheme of the connection, the Host header, its port) or one
of CSRF_TRUSTED_ORIGINS; the Host itself must be an allowed host.

Logout: a socket authenticates once, when it opens. Each socket joins its user's group; Django's
`user_logged_out` is sent to that group with the session that ended, and the sockets opened
with that session close (the user's other browsers keep theirs).
"""

import hashlib
import logging
from urllib.parse import urlsplit

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.dispatch import receiver
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

log = logging.getLogger(__name__)

DEFAULT_PORTS = {"http": 80, "https": 443}
CLOSE_LOGGED_OUT = 4401  # the code a socket gets when it opens without a signed-in user


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


def origin_allowed(scope):
    headers = {k.lower(): v.decode("latin1") for k, v in scope.get("headers", [])}
    raw = headers.get(b"origin", "").strip()
    origin = _origin(raw)
    if origin is None:  # absent, "null" (sandboxed frames, file://) or not http(s)
        return False
    host = headers.get(b"host", "").strip()
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return False
    if origin == _origin(("https://" if _secure(scope, headers) else "http://") + host):
        return True
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" in trusted:  # "https://*.example.com": that scheme, any subdomain (CSRF's own rule)
            parts = urlsplit(trusted)
            if parts.scheme.lower() == origin[0] and is_same_domain(urlsplit(raw).netloc.lower(),
                                                                    parts.netloc.lower().lstrip("*")):
                return True
        elif origin == _origin(trusted):
            return True
    return False


class SameOriginValidator:
    """ASGI middleware: refuse a WebSocket whose Origin is not the site's own or a trusted one."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)


# --- logout ------------------------------------------------------------------------------------

def user_group(user_id):
    return f"sockets.user.{user_id}"


def session_tag(session_key):
    """The session, named without its key (the key is a credential; group messages pass Redis)."""
    return hashlib.sha256(f"socket-session:{session_key}".encode()).hexdigest()[:32] if session_key else None


class SignedInSocket:
    """Mixin for AsyncWebsocketConsumer: the socket lives as long as the session it opened with."""

    _signed_out = False

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

    async def websocket_receive(self, message):
        if self._signed_out:  # frames already in flight when the session ended
            return
        await super().websocket_receive(message)

    async def session_ended(self, message):
        """Channel-layer message from the logout receiver below."""
        if message.get("session") in (None, self._session_tag()):
            self._signed_out = True
            await self.close(code=CLOSE_LOGGED_OUT)
            await self.disconnect(CLOSE_LOGGED_OUT)  # stop its work now (a stream pump), not when the peer answers


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
