"""API tokens: DRF's authtoken Token, which expire AGUI_TOKEN_TTL_SECONDS after they were made and
are revoked by deleting them (DELETE /api/auth/token/, or the admin's Tokens page); a new password
deletes the account's (agui_project/access_changes.py).

DRF's Token has no expiry of its own; its `created` is enough to give it one, so no model of ours.
Every way in (`Token <key>`, `Bearer <key>`, the AG-UI endpoint) goes through `token_user`.
The view is in agents/token_api.py: DRF's APIView reads the authentication classes (this module)
when it is imported.
"""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from . import language
from .queries import Prepared

# why a token was refused (the answer's `reason`: a program cannot tell the translated sentences
# apart, and an expired token wants a new one where a disabled account wants a person)
REFUSALS = {
    "unknown": _("The token is not valid: it may have been revoked or mistyped."),
    "expired": _("The token has expired. Ask for a new one."),
    "inactive": _("The account this token belongs to is disabled."),
}
SCHEMES = ("token", "bearer")


class TokenRefused(exceptions.AuthenticationFailed):
    """401 `invalid_token` (RFC 6750's name, on the REST API and the AG-UI endpoint alike), with
    the `reason` (a REFUSALS key) beside the sentence."""

    def __init__(self, reason):
        super().__init__(REFUSALS[reason], code="invalid_token")
        self.reason = reason


def token_expires_at(token):
    """When `token` stops working, or None when tokens never expire (AGUI_TOKEN_TTL_SECONDS=0)."""
    ttl = settings.AGUI_TOKEN_TTL_SECONDS
    return token.created + timedelta(seconds=ttl) if ttl > 0 else None


# the user's saved language comes with it (people.Profile, by its relation's name: no import of the
# app): the answer's language costs no query of its own (agui_project/language.py). Every token
# request reads it: compiled once (queries.Prepared), 572 -> ~80 µs here.
_TOKEN = Prepared("authtoken.Token",  # a name: DRF imports this module before the app registry is ready
                  lambda key: _TOKEN.model.objects.select_related("user", "user__profile").filter(key=key))


def token_user(key):
    """(user, token, None) for a key that may be used now, else (None, None, why not: a REFUSALS key)."""
    token = _TOKEN.one(key)
    if token is None:
        return None, None, "unknown"
    expires = token_expires_at(token)
    if expires is not None and expires <= timezone.now():
        return None, None, "expired"
    if not token.user.is_active:
        return None, None, "inactive"
    return token.user, token, None


def _header_key(request):
    """The key of a `Token <key>` or `Bearer <key>` Authorization header, or None."""
    scheme, _sp, key = request.META.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    if scheme.lower() not in SCHEMES or not key.strip() or " " in key.strip():
        return None
    return key.strip()


def header_user(request):
    """The user of the valid token in the request's Authorization header, or None. For answers made
    before or without DRF's authentication (the JSON error handlers): the API's views use the classes."""
    key = _header_key(request)
    return token_user(key)[0] if key else None


def header_reads(request):
    """The read of the header's token as (read, values), for a caller that reads it together with
    others (queries.read_ahead); the authentication classes then take its row."""
    key = _header_key(request)
    return [(_TOKEN, (key,))] if key else []


class ExpiringTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>`, refused once the token expired or was revoked. A valid token
    sets the language of the answer (agui_project/language.py): its user's, unless the caller
    asks for one with Accept-Language."""

    def authenticate(self, request):
        found = super().authenticate(request)
        if found is not None:
            language.activate(request, found[0])
        return found

    def authenticate_credentials(self, key):
        user, token, reason = token_user(key)
        if user is None:
            raise TokenRefused(reason)
        return user, token


class BearerTokenAuthentication(ExpiringTokenAuthentication):
    """`Authorization: Bearer <key>` with the same tokens (AG-UI clients send Bearer)."""

    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The schema names it apart from `Token <key>` (both take the same DRF token)."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A DRF token: `Authorization: Bearer <key>`"}
