"""Request hygiene in front of every view: a body size limit, and JSON errors for machine endpoints.

- A body larger than AGUI_MAX_BODY_BYTES is refused with 413 and a JSON message before any view,
  form or parser reads it (Django alone answers 400 with an HTML page, and only when the client
  sent Content-Length; a chunked body has none). Daphne has already buffered the body by then: a
  proxy in front (client_max_body_size) is what protects memory; this keeps the contract.
- Under /api/ and /agui/ every error is JSON with a `message`: unknown routes, bodies that no
  JSON parser should be handed (nesting deep enough to overflow the parser's recursion, a
  \\u0000 that PostgreSQL cannot store in text), and unexpected exceptions (logged, then 500).
"""

import json
import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.http.response import HttpResponseBase

from .middleware import DualModeMiddleware

log = logging.getLogger("django.request")

JSON_PREFIXES = ("/api/", "/agui/")
MAX_JSON_DEPTH = 200  # far beyond any real RunAgentInput or API body; well under the recursion limit
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def max_body_bytes():
    return settings.AGUI_MAX_BODY_BYTES


def too_large(size=None):
    limit = max_body_bytes()
    detail = f" ({size} bytes)" if size is not None else ""
    return JsonResponse({"message": f"the request body is too large{detail}; the limit is {limit} bytes",
                         "code": "body_too_large", "limit": limit}, status=413)


def _declared_length(request):
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def _json_depth_ok(body: bytes) -> bool:
    """False when the body nests arrays/objects deeper than MAX_JSON_DEPTH.

    Counting openers is a C-speed upper bound on the depth; only a body with that many of
    them is walked (outside strings) to find the real depth.
    """
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return True
    depth, in_string, escaped = 0, False, False
    for ch in body.decode("utf-8", "replace"):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _before(request):
    """A response that refuses the request, or None to let it through."""
    if request.method not in BODY_METHODS:
        return None
    declared = _declared_length(request)
    if declared is not None and declared > max_body_bytes():
        return too_large(declared)
    if not request.path.startswith(JSON_PREFIXES) and declared is not None:
        return None  # forms: Django enforces DATA_UPLOAD_MAX_MEMORY_SIZE (= our limit) on parsing
    try:
        body = request.body  # no Content-Length (chunked): Django would read it whole, unchecked
    except RequestDataTooBig:
        return too_large()
    if len(body) > max_body_bytes():
        return too_large(len(body))
    if request.path.startswith(JSON_PREFIXES) and "json" in request.META.get("CONTENT_TYPE", ""):
        if not _json_depth_ok(body):
            return JsonResponse({"message": f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels",
                                 "code": "too_deep"}, status=400)
        if b"\\u0000" in body:
            return JsonResponse({"message": "the JSON body contains a NUL character (\\u0000), which is not accepted",
                                 "code": "nul_character"}, status=400)
    return None


def _after(request, response):
    """Machine endpoints answer errors in JSON with a message, whatever produced them."""
    if (
        response.status_code >= 400
        and request.path.startswith(JSON_PREFIXES)
        and "json" not in response.get("Content-Type", "")
        and not response.streaming
    ):
        reason = getattr(response, "reason_phrase", "") or "error"
        return JsonResponse({"message": reason.lower() if reason else "error", "code": f"http_{response.status_code}"},
                            status=response.status_code)
    return response


def _on_exception(request, exc):
    if isinstance(exc, RequestDataTooBig):
        return too_large()
    if not request.path.startswith(JSON_PREFIXES):
        return None  # pages keep Django's error handling
    log.error("Internal Server Error: %s", request.path, exc_info=exc, extra={"status_code": 500, "request": request})
    return JsonResponse({"message": "internal error; nothing further was done", "code": "internal_error"}, status=500)


class RequestLimitsMiddleware(DualModeMiddleware):
    """First in MIDDLEWARE; sync and async capable (no thread hop in front of async views)."""

    def sync_call(self, request):
        refused = _before(request)
        if refused is not None:
            return refused
        return _after(request, self.get_response(request))

    async def __acall__(self, request):
        refused = _before(request)
        if refused is not None:
            return refused
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
