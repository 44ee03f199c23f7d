"""Request hygiene in front of every view: a body size limit, and JSON errors for machine endpoints.

- A body larger than AGUI_MAX_BODY_BYTES is refused with 413 and a JSON message before any view,
  form or parser reads it (Django alone answers 400 with an HTML page, and only when the client
  sent Content-Length; a chunked body has none). Daphne has already buffered the body by then: a
  proxy in front (client_max_body_size) is what protects memory; this keeps the contract.
- Under /api/ and /agui/ every error is JSON with a `message`: unknown routes, bodies that no
  JSON parser or view should be handed (jsoncheck: nesting deep enough to overflow the parser's
  recursion, a \\u0000 that PostgreSQL cannot store in text, a lone surrogate that is not
  Unicode), refused with 400 naming the field, a compressed body (415: nothing here reads one),
  and unexpected exceptions (logged, then 500).
"""

import codecs
import json
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig
from django.http import JsonResponse
from django.http.response import HttpResponseBase
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import auth, busy, jsoncheck, language
from .logs import printable
from .middleware import DualModeMiddleware

log = logging.getLogger("django.request")

JSON_PREFIXES = ("/api/", "/agui/")
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def max_body_bytes():
    return settings.AGUI_MAX_BODY_BYTES


# The sentence of an error answered here for a response that had none (an HTML page, an empty body)
HTTP_ERRORS = {
    400: gettext_lazy("bad request"), 401: gettext_lazy("authentication required"),
    403: gettext_lazy("you may not do this"), 404: gettext_lazy("not found"),
    405: gettext_lazy("method not allowed"), 406: gettext_lazy("not acceptable"), 409: gettext_lazy("conflict"),
    410: gettext_lazy("gone"), 413: gettext_lazy("the request body is too large"),
    415: gettext_lazy("unsupported media type"), 429: gettext_lazy("too many requests"),
    500: gettext_lazy("internal error; nothing further was done"), 503: gettext_lazy("service unavailable"),
}


def too_large(size=None):
    limit = max_body_bytes()
    if size is None:
        message = _("the request body is too large; the limit is %(limit)s bytes") % {"limit": limit}
    else:
        message = _("the request body is too large (%(size)s bytes); the limit is %(limit)s bytes") % {
            "size": size, "limit": limit}
    return language.mark(JsonResponse({"message": message, "code": "body_too_large", "limit": limit}, status=413))


def _refused(request, build):
    """A refusal made here, in front of LocaleMiddleware: in the caller's language (a token caller's
    own, as the API's views choose it; agui_project/language.py), and saying which. Sync: it may
    read the token (the async chain calls it on a thread)."""
    language.activate(request, auth.header_user(request) if request.path.startswith(JSON_PREFIXES) else None)
    return build()


def encoded(coding):
    """415 for a body sent with a content coding (gzip...): Django and our parsers read it as it
    came, so it read as "not JSON" (or as Python's decoding error), which says nothing of the cause.
    Not decompressed: a few KB of gzip can expand past any body limit. RFC 9110 15.5.16, 12.5.3."""
    response = JsonResponse({"message": _("the request body is compressed (Content-Encoding: %(coding)s); send it "
                                          "uncompressed") % {"coding": coding[:100]},
                             "code": "unsupported_content_encoding"}, status=415)
    response["Accept-Encoding"] = "identity"
    return language.mark(response)


def json_text(request, body):
    """The JSON body as its parsers read it: decoded by the charset its Content-Type names (DRF's
    JSONParser decodes so), else the bytes (json reads UTF-8, -16 and -32 from them). The gate
    checked the bytes as UTF-8 whatever was named: a cp500 body's brackets are not "[" there (one
    nesting 50000 deep reached DRF's parser: a 500), and a latin-1 one failed to parse, so passed
    unchecked, and its \\u0000 was stored. A body the charset does not decode stays bytes (its
    parser refuses it too)."""
    charset = request.encoding
    if not charset or codecs.lookup(charset).name == "utf-8":
        return body
    try:
        return body.decode(charset)  # refuses a codec that is not text (bz2_codec), as DRF does
    except (LookupError, UnicodeError):
        return body


def _declared_length(request):
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def _refuse_nul(request):
    """Pages: a NUL in the path, the query or a form field is a 400 (the site's page), not a 500 of
    PostgreSQL, which stores no NUL in text: the inbox's filters and ids, a rejection's reason, the
    admin's search reached queries with it. The API and AG-UI answer it naming the field."""
    if request.path.startswith(JSON_PREFIXES):
        return
    fields = [request.GET]
    if request.method in BODY_METHODS and request.content_type in FORMS:
        fields.append(request.POST)  # parsed once: the CSRF check and the view read the same
    if "\x00" in request.path or any("\x00" in key or any("\x00" in v for v in values)
                                     for params in fields for key, values in params.lists()):
        raise BadRequest("a NUL character in the request")


def _before(request):
    """What refuses the request (a callable that builds the response: _refused), or None to let it
    through; raises BadRequest for a NUL (after the size check: a form too large to parse is 413)."""
    refusal = _limits(request)
    if refusal is None:
        _refuse_nul(request)
    return refusal


def _limits(request):
    if request.method not in BODY_METHODS:
        return None
    machine = request.path.startswith(JSON_PREFIXES)
    coding = request.META.get("HTTP_CONTENT_ENCODING", "").strip()
    if coding and coding.lower() != "identity" and machine:
        return lambda: encoded(coding)
    declared = _declared_length(request)
    if declared is not None and declared > max_body_bytes():
        return lambda: too_large(declared)
    if not machine and declared is not None:
        return None  # forms: Django enforces DATA_UPLOAD_MAX_MEMORY_SIZE (= our limit) on parsing
    try:
        body = request.body  # no Content-Length (chunked): Django would read it whole, unchecked
    except RequestDataTooBig:
        return too_large
    if len(body) > max_body_bytes():
        return lambda: too_large(len(body))
    refusal = None
    # the media type as parsers match it, lowercased (RFC 9110 8.3.1): "Application/JSON" is JSON to DRF
    if machine and "json" in request.content_type:
        refusal = jsoncheck.check_body(json_text(request, body))  # the same gate as the AG-UI view and the sockets
    elif machine and request.content_type in FORMS:
        # the API parses forms too ("arguments.a=..." is a DictField's): the same gate, or a NUL
        # reached a JSON column (PostgreSQL: 500)
        refusal = jsoncheck.problem({key: values[0] if len(values) == 1 else values
                                     for key, values in request.POST.lists()})
    if refusal is not None:
        return lambda: language.mark(JsonResponse(refusal.payload(), status=400))
    return None


def _after(request, response):
    """Machine endpoints answer errors in JSON with a message, whatever produced them."""
    if (
        response.status_code >= 400
        and request.path.startswith(JSON_PREFIXES)
        and "json" not in response.get("Content-Type", "")
        and not response.streaming
    ):
        # rendered in the language the view answered in (LocaleMiddleware named it on the response)
        spoken = response.get("Content-Language") or translation.get_language()
        with translation.override(spoken):
            message = str(HTTP_ERRORS.get(response.status_code) or (response.reason_phrase or _("error")).lower())
        return language.mark(JsonResponse({"message": message, "code": f"http_{response.status_code}"},
                                          status=response.status_code), spoken)
    return response


def _on_exception(request, exc):
    if isinstance(exc, RequestDataTooBig):
        return too_large()
    if busy.is_busy(exc) or busy.redis_away(exc):  # every view: 503 + Retry-After (agui_project/busy.py)
        log.warning("%s: %s %s: %s", "Redis away" if busy.redis_away(exc) else "database busy", request.method,
                    request.path, exc)
        return busy.response(request, json_body=request.path.startswith(JSON_PREFIXES), exc=exc)
    if not request.path.startswith(JSON_PREFIXES):
        return None  # pages keep Django's error handling
    log.error("Internal Server Error: %s", printable(request.path), exc_info=exc, extra={"status_code": 500, "request": request})
    return JsonResponse({"message": _("internal error; nothing further was done"), "code": "internal_error"},
                        status=500)


class RequestLimitsMiddleware(DualModeMiddleware):
    """First in MIDDLEWARE; sync and async capable (no thread hop in front of async views)."""

    def sync_call(self, request):
        refusal = _before(request)
        if refusal is not None:
            return _refused(request, refusal)
        return _after(request, self.get_response(request))

    async def __acall__(self, request):
        refusal = _before(request)
        if refusal is not None:
            return await sync_to_async(_refused)(request, refusal)
        return _after(request, await self.get_response(request))

    def process_exception(self, request, exception):
        return _on_exception(request, exception)


def is_json_error(response: HttpResponseBase) -> bool:
    """For tests: a JSON body with a non-empty string `message`."""
    try:
        body = json.loads(response.content)
    except (ValueError, AttributeError):
        return False
    return isinstance(body, dict) and isinstance(body.get("message"), str) and bool(body["message"])
