"""The language of an answer to a program: the REST API, the AG-UI endpoint and their JSON errors.

A caller with a token (DRF authentication runs after every middleware, so people/middleware.py
never sees its user) is answered in: the language its `Accept-Language` asks for, when it asks for
one we have; else its user's saved language (people.Profile); else what LocaleMiddleware chose
(LANGUAGE_CODE for a caller without a language cookie). The token authentication classes
(agui_project/auth.py) activate it once the token is known, so every message after that (permission
refusals, validation errors, services' errors, the JSON error handlers) comes out in it, and
LocaleMiddleware's Content-Language names it. A session caller keeps people/middleware.py's choice.

The saved language is read through a hook people/apps.py fills (project plumbing imports no app).
Only the human sentence (`message`, `detail`) is translated; `code` and field names never are.
"""

from django.conf import settings
from django.utils import translation
from django.utils.translation import trans_real

_saved_language = None  # user -> language code or "" (people.selectors.language_of)


def set_saved_language(reader):
    global _saved_language
    _saved_language = reader


def _supported(code):
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        return None


def _asked(request):
    """The first language of the caller's Accept-Language that we have, or None."""
    header = request.META.get("HTTP_ACCEPT_LANGUAGE", "")
    for code, _q in trans_real.parse_accept_lang_header(header):
        if code == "*":
            break
        found = _supported(code)
        if found:
            return found
    return None


def choose(request, user=None):
    asked = _asked(request)
    if asked:
        return asked
    saved = _saved_language(user) if user is not None and _saved_language is not None else ""
    return (saved and _supported(saved)) or translation.get_language_from_request(request) or settings.LANGUAGE_CODE


def activate(request, user):
    """Answer this request in `user`'s language as above (a token caller, once authenticated)."""
    language = choose(request, user)
    translation.activate(language)
    django_request = getattr(request, "_request", request)  # a DRF Request wraps Django's
    django_request.LANGUAGE_CODE = language
    return language


def for_error(request, token_user=None):
    """The language of a JSON error answered outside the API's views (unknown routes, body limits,
    crashes): a token caller's, as its views would have chosen (`token_user`: the token's user,
    looked up by the caller, None when the request carries no valid token), activated; else the
    current one (LocaleMiddleware's and people/middleware.py's choice). Returns the code."""
    if token_user is not None:
        return activate(request, token_user)
    return translation.get_language() or settings.LANGUAGE_CODE


def mark(response, language=None):
    """Content-Language on a response made where LocaleMiddleware will not see it (in front of it)."""
    response["Content-Language"] = language or translation.get_language() or settings.LANGUAGE_CODE
    return response
