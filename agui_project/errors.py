"""The site's error pages (400, 403, 404, 500): the site's own layout with a sentence that says what
happened and what to do, in place of Django's bare "403 Forbidden". A machine endpoint (/api/,
/agui/, or a request that asks for JSON: the inbox's fetches) gets JSON with a `message` instead,
as agui_project/limits.py gives it for the errors it catches itself.

Django calls these only with DEBUG off for 404 and 500 (DEBUG shows its technical pages); 403 and
400 always."""

import logging
import sys

from django.conf import settings
from django.http import HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.utils.translation import gettext_lazy as _

from . import auth, busy, language
from .limits import JSON_PREFIXES
from .logs import printable

log = logging.getLogger(__name__)


def wants_json(request):
    accept = request.headers.get("Accept", "")
    return (request.path.startswith(JSON_PREFIXES) or request.headers.get("X-Requested-With") == "XMLHttpRequest"
            or ("application/json" in accept and "text/html" not in accept))


def _json(request, payload, status, look_up_token=True):
    """A JSON error in the caller's language: a token caller's own (agui_project/language.py), as
    the API's views would have answered it; else the language the middleware chose. The payload's
    lazy sentences are rendered once that language is active. (A 500 reads no token: the database
    may be what broke.)"""
    token = look_up_token and request.path.startswith(JSON_PREFIXES)
    language.for_error(request, auth.header_user(request) if token else None)
    return JsonResponse({key: str(value) for key, value in payload.items()}, status=status)


def _reason(exception):
    """The PermissionDenied's own message, when the view gave one for people ("The inbox is for
    reviewers."): a whole translated sentence, its capital and full stop the language's own (an
    ASCII "." added here ended a Chinese one); Django's own carry none."""
    text = str(exception or "").strip() if exception is not None else ""
    if not text or text.startswith("<"):
        return ""
    return text


def bad_request(request, exception=None):
    if wants_json(request):
        return _json(request, {"message": _("bad request"), "code": "bad_request"}, 400)
    return render(request, "400.html", status=400)


def permission_denied(request, exception=None):
    if wants_json(request):
        return _json(request, {"message": _reason(exception) or _("you may not do this"), "code": "forbidden"}, 403)
    return render(request, "403.html", {"reason": _reason(exception)}, status=403)


def _deployment_hint(request, reason):
    """What a refusal says of the deployment rather than of the person: every form of the site fails
    so, and Django's reason alone ("CSRF cookie not set", "Origin checking failed") did not say why."""
    if settings.CSRF_COOKIE_SECURE and not request.is_secure():
        return ("this request came over plain HTTP while the cookies are Secure (DJANGO_DEBUG=0): browsers keep "
                "no cookie from an http:// page, so no form of this site can be sent; serve it over HTTPS, and "
                "behind a TLS-terminating proxy set AGUI_PROXY_SSL_HEADER so that requests are seen as such")
    if reason.startswith("Origin checking failed"):
        scheme = "https" if request.is_secure() else "http"
        return (f"this site took itself for {scheme}://{request.get_host()} (the Host header, and the scheme of the "
                "connection or of AGUI_PROXY_SSL_HEADER); a proxy in front must pass the Host the browser sent, port "
                "and all, and its scheme header, or DJANGO_CSRF_TRUSTED_ORIGINS must name the public origin")
    return None


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: a form whose token was missing or stale (a page left open past a sign-in in
    another tab, blocked cookies), said so in the site's layout instead of Django's bare page; the
    reason Django gives is for the log, not for people. A refusal every form would get (plain HTTP
    with Secure cookies, a proxy that loses the Host's port or the scheme) is a warning with its cause."""
    hint = _deployment_hint(request, reason)
    if hint:
        log.warning("CSRF check failed on %s: %s; %s", printable(request.path), reason, hint)
    else:
        log.info("CSRF check failed on %s: %s", printable(request.path), reason)
    if wants_json(request):
        # said to people (the page's script shows it after "Your decision was not sent."): not Django's "CSRF token"
        message = (_("This site is set up so that nothing can be sent from this address; its administrator finds "
                     "why in the site's log. What you typed is kept.") if hint else
                   _("This page was opened before a sign-in, or the site's cookies were cleared, so it cannot send "
                     "anything. Reload the page and try again: what you typed is kept."))
        response = _json(request, {"message": message, "code": "csrf_failed"}, 403)
    else:
        # a refusal of the setup is not the person's cookies: telling them to allow cookies sent them, and the
        # deployer trying the sign-in, the wrong way
        response = render(request, "csrf_failure.html", {"setup": bool(hint)}, status=403)
    # said above, once, with its cause and the path made printable: not again by Django's middleware
    # ("Forbidden (...): <path>" through django.utils.log.log_response)
    response._has_been_logged = True
    return response


def page_not_found(request, exception=None):
    if wants_json(request):
        return _json(request, {"message": _("not found"), "code": "not_found"}, 404)
    return render(request, "404.html", {"request_path": request.path}, status=404)


def server_error(request):
    # Django calls this inside its `except`: a busy or unreachable database met outside a view (the
    # session or user read by a middleware, before any view's process_exception) is a 503 too
    exc = sys.exc_info()[1]
    if busy.is_busy(exc) or busy.redis_away(exc):
        log.warning("%s: %s %s: %s", "Redis away" if busy.redis_away(exc) else "database busy", request.method,
                    request.path, exc)
        response = busy.response(request, json_body=wants_json(request), exc=exc)
        response._has_been_logged = True  # django.utils.log.log_response: not again as an ERROR
        return response
    if wants_json(request):
        return _json(request, {"message": _("internal error; nothing further was done"), "code": "internal_error"},
                     500, look_up_token=False)
    try:  # with the navigation; but whatever broke (the database?) may break the page's context too
        return render(request, "500.html", status=500)
    except Exception:
        log.exception("the 500 page could not be rendered with its navigation")
    try:
        return HttpResponseServerError(loader.get_template("500.html").render({}))
    except Exception:
        return HttpResponseServerError("<h1>Server error</h1><p>Something went wrong on our side.</p>")
