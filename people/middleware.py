"""A signed-in person's saved language wins over the browser's preference.

Runs after LocaleMiddleware (which has chosen from the language cookie, then Accept-Language,
then LANGUAGE_CODE) and AuthenticationMiddleware. The choice is read from the profile once per
session and kept in the session, so a page costs no query for it; the picker
(people.views.set_language) updates both.
"""

from django.conf import settings
from django.contrib import messages
from django.utils import translation
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext as _

from . import selectors

SESSION_KEY = "people_language"


class UserLanguageMiddleware(MiddlewareMixin):
    def process_request(self, request):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return
        language = request.session.get(SESSION_KEY)
        if language is None:
            language = request.session[SESSION_KEY] = selectors.language_of(user)
        if language and language != request.LANGUAGE_CODE:
            translation.activate(language)
            request.LANGUAGE_CODE = translation.get_language()


class SessionEndedMiddleware(MiddlewareMixin):
    """A browser that sent a session cookie and is sent to sign in before going on (`?next=`: not a
    logout's own redirect) while not signed in had its session end under it (expired, deleted on the
    server, a password changed elsewhere): the sign-in page says so. A click on Approve or Send turned
    into that page with no word of why. (That redirect deletes the cookie, so the sign-in page itself
    cannot tell; Django's messages carry it there.) After MessageMiddleware: its response comes first.
    A hook of the classic middleware's group (agui_project/handler.py): no thread hop of its own."""

    def process_response(self, request, response):
        if (response.status_code == 302 and request.COOKIES.get(settings.SESSION_COOKIE_NAME)
                and response.get("Location", "").startswith(f"{settings.LOGIN_URL}?next=")
                and not request.user.is_authenticated):
            messages.info(request, _("Your session has ended. Log in again to go on where you were."))
        return response
