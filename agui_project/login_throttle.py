"""Sign-in throttling: after AGUI_LOGIN_MAX_FAILURES failed passwords for one account from one
address within AGUI_LOGIN_WINDOW_SECONDS, that account refuses sign-ins from that address until
the window ends; one address gets five times as many failures over all accounts.

Counted in Redis (every web process sees the same counts). Keyed by address as well as account, so
a stranger cannot lock a person out of their own account from elsewhere; behind a proxy the
address is the client's (AGUI_TRUSTED_PROXIES, `client_address`). When Redis cannot be
asked, sign-in works unthrottled (and says so in the log) rather than locking everyone out.
"""

import functools
import ipaddress
import logging

import redis
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import ngettext

from agui_project.redis_client import brief_client

log = logging.getLogger(__name__)

ADDRESS_FACTOR = 5  # failures one address may make over all accounts, in multiples of the per-account limit


@functools.lru_cache(maxsize=8)
def _networks(trusted):
    return tuple(ipaddress.ip_network(n, strict=False) for n in trusted)


def _ip(text):
    """The address in `text` (IPv4-mapped IPv6 as IPv4), or None when it is not one."""
    try:
        addr = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    return addr.ipv4_mapped or addr if addr.version == 6 else addr


def client_address(request):
    """Who is signing in, as an address: REMOTE_ADDR, unless that is one of AGUI_TRUSTED_PROXIES;
    then the right-most X-Forwarded-For entry that is not a trusted proxy. Entries further left
    were written by the client and prove nothing; a peer that is not trusted cannot choose its
    address with the header. Done here, not by Daphne's --proxy-headers, which trusts any peer."""
    remote = (request.META.get("REMOTE_ADDR") or "") if request is not None else ""
    trusted = _networks(tuple(settings.AGUI_TRUSTED_PROXIES))
    peer = _ip(remote)
    if peer is None or not any(peer in net for net in trusted):
        if peer is not None and request.META.get("HTTP_X_FORWARDED_FOR"):
            _untrusted_forwarder(str(peer))
        return str(peer) if peer is not None else (remote or "unknown")
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        addr = _ip(hop)
        if addr is None:  # written by a trusted proxy, yet not an address: keep the proxy's own
            return str(peer)
        if not any(addr in net for net in trusted):
            return str(addr)
        peer = addr
    return str(peer)  # every hop was a trusted proxy: the left-most one is as close as it gets


_WARNED = set()  # peers already named in the log by this process (bounded: a client may send the header too)
_WARNED_MAX = 64


def _untrusted_forwarder(peer):
    """Say once per process that a peer sends X-Forwarded-For without being a trusted proxy. Behind a
    proxy left out of AGUI_TRUSTED_PROXIES (or a web process whose list differs from the others') every
    client is that proxy's address: a few dozen failed sign-ins from anyone then refuse everyone behind
    it (ADDRESS_FACTOR times the limit, over all accounts), and nothing said why."""
    if peer in _WARNED or len(_WARNED) >= _WARNED_MAX:
        return
    _WARNED.add(peer)
    log.warning("sign-in throttling: %s sends X-Forwarded-For but is not in AGUI_TRUSTED_PROXIES, so every "
                "client reaching us through it counts as %s (after %s failed sign-ins over all accounts it refuses "
                "them all); list it there if it is your proxy", peer, peer,
                settings.AGUI_LOGIN_MAX_FAILURES * ADDRESS_FACTOR)


def _keys(username, request):
    address = client_address(request)
    return f"agui:login-failures:{username.strip().lower()}:{address}", f"agui:login-failures-from:{address}"


def _client():
    # brief: a sign-in works unthrottled without Redis, and three calls through the product's client
    # (its retries ride out ~12 s each) held a sign-in 38 s while Redis was down
    return brief_client()


def retry_after(username, request):
    """Seconds until this account may sign in again from this address; 0 when it may now."""
    if not username:
        return 0
    limit = settings.AGUI_LOGIN_MAX_FAILURES
    account, address = _keys(username, request)
    try:
        pipe = _client().pipeline(transaction=False)
        pipe.get(account).ttl(account).get(address).ttl(address)
        account_n, account_ttl, address_n, address_ttl = pipe.execute()
    except redis.RedisError as exc:
        log.warning("sign-in throttle skipped: Redis unreachable (%s)", exc)
        return 0
    waits = [ttl for n, ttl, cap in ((account_n, account_ttl, limit), (address_n, address_ttl, limit * ADDRESS_FACTOR))
             if n is not None and int(n) >= cap]
    return max(max(waits), 1) if waits else 0


def _failed(username, request):
    try:
        pipe = _client().pipeline(transaction=True)
        for key in _keys(username, request):
            # the window starts with the first failure (SET NX EX; INCR keeps the expiry)
            pipe.set(key, 0, ex=settings.AGUI_LOGIN_WINDOW_SECONDS, nx=True).incr(key)
        _, account_n, _, address_n = pipe.execute()
    except redis.RedisError as exc:
        log.warning("sign-in failure not counted: Redis unreachable (%s)", exc)
        return
    _say_lockout(username, request, account_n, address_n)


def _say_lockout(username, request, account_n, address_n):
    """One WARNING per lockout (the failure whose count reaches the limit: INCR gives it to one process
    only): a lockout was in Redis alone, and an operator asked why someone cannot sign in, or watching
    for guessing, had nothing in the log. The account by name only when one has it: what was typed as
    a name is sometimes a password."""
    limit, window = settings.AGUI_LOGIN_MAX_FAILURES, settings.AGUI_LOGIN_WINDOW_SECONDS
    if account_n == limit:
        from django.contrib.auth import get_user_model

        model = get_user_model()
        known = model._default_manager.filter(**{f"{model.USERNAME_FIELD}__iexact": username.strip()}).exists()
        log.warning("sign-in lockout: %s refuses %s for up to %s s after %s failed passwords from it "
                    "(AGUI_LOGIN_MAX_FAILURES, AGUI_LOGIN_WINDOW_SECONDS)",
                    f"account {username.strip()!r}" if known else "an account name nobody has",
                    client_address(request), window, limit)
    if address_n == limit * ADDRESS_FACTOR:
        log.warning("sign-in lockout: every account refuses %s for up to %s s after %s failed passwords from it "
                    "over all accounts (%s × AGUI_LOGIN_MAX_FAILURES)", client_address(request), window,
                    limit * ADDRESS_FACTOR, ADDRESS_FACTOR)


def _succeeded(username, request):
    try:
        _client().delete(_keys(username, request)[0])
    except redis.RedisError as exc:
        log.warning("sign-in failures not cleared: Redis unreachable (%s)", exc)


class ThrottledModelBackend(ModelBackend):
    """Django's username/password check, refusing while throttled, counting each failure."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        username = username if username is not None else kwargs.get("username")
        if not username:
            return super().authenticate(request, username=username, password=password, **kwargs)
        if retry_after(username, request):
            raise PermissionDenied("too many failed sign-ins")  # authenticate() stops here: no password check
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            _failed(username, request)
        else:
            _succeeded(username, request)
        return user


def _throttle_message(seconds):
    minutes = -(-seconds // 60)
    return ngettext("Too many failed sign-ins for this account from your address. Try again in %(minutes)s minute.",
                    "Too many failed sign-ins for this account from your address. Try again in %(minutes)s minutes.",
                    minutes) % {"minutes": minutes}


class ThrottledFormMixin:
    """Says why a sign-in is refused while throttled (the backend refuses it either way)."""

    def clean(self):
        wait = retry_after(self.cleaned_data.get("username") or "", self.request)
        if wait:
            raise ValidationError(_throttle_message(wait), code="throttled")
        return super().clean()


class ThrottledAuthenticationForm(ThrottledFormMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledFormMixin, AdminAuthenticationForm):
    pass
