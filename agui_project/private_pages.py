"""Answers to a signed-in person or a token are not stored by caches (`Cache-Control: private,
no-store`): the inbox, a request's page, the chat, the audit log and the API's JSON show requests'
arguments, account numbers and conversations. Without it a browser on a shared computer showed the
inbox again from its cache (Back) after its user had signed out; Django keeps out of caches only
the views that say never_cache (sign-in, the mailed links' pages). An answer that says how it may be
cached (the AG-UI stream, never_cache views) keeps what it says; public answers are left alone.

Which answers are personal is read from the request itself (a session cookie, an Authorization
header), not from request.user: a plain response hook, grouped with the session's middleware
(agui_project/handler.py), that reads no session and no database."""

from django.conf import settings
from django.utils.cache import add_never_cache_headers
from django.utils.deprecation import MiddlewareMixin


class PrivateResponsesMiddleware(MiddlewareMixin):
    def process_response(self, request, response):
        personal = settings.SESSION_COOKIE_NAME in request.COOKIES or "HTTP_AUTHORIZATION" in request.META
        if personal and not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
        return response
