"""A signed-in person's saved language wins over the browser's preference (which is noted on their
profile for what is written for them away from their pages); pages show times in their time zone.

UserLanguageMiddleware runs after LocaleMiddleware (which has chosen from the language cookie, then Accept-Language,
then LANGUAGE_CODE) and AuthenticationMiddleware. The choice is read from the profile once per
session and kept in the session, so a page costs no query for it; the picker
(people.views.set_language) updates both.
"""

from django.conf import settings
from django.contrib import messages
from django.utils import timezone, translation
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext as _

from agui_project.limits import JSON_PREFIXES

from . import selectors, services, zones

SESSION_KEY = "people_language"
BROWSER_LANGUAGE_SESSION_KEY = "people_browser_language"  # the page language last written to their profile
ZONE_SESSION_KEY = "people_time_zone"  # the zone the person chose ("" none), read once per session
BROWSER_ZONE_SESSION_KEY = "people_browser_time_zone"  # the browser zone last written to their profile


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
        elif not language and not request.path_info.startswith(JSON_PREFIXES):
            # the browser's language, which a page was just shown in, is also what the chat's cards,
            # the run's outcomes and the mails are written in (they are made away from any request);
            # only a page's: a script or client's API call may ask for no language at all
            if request.session.get(BROWSER_LANGUAGE_SESSION_KEY) != request.LANGUAGE_CODE:
                services.note_browser_language(user=user, language=request.LANGUAGE_CODE)
                request.session[BROWSER_LANGUAGE_SESSION_KEY] = request.LANGUAGE_CODE


class TimeZoneMiddleware(MiddlewareMixin):
    """Pages in the reader's clock: the zone a signed-in person chose (read once per session, as the
    language is), else their browser's (static/js/time-zone.js's cookie, ignored unless zoneinfo knows
    it), else UTC (TIME_ZONE). Machine answers (/api/, /agui/) stay UTC: DRF writes a datetime in the
    active zone. A signed-in person's browser zone is kept on their profile when it changes, for the
    mails of someone who chose none. Its I/O is the session's (SESSIONLESS_INLINE in handler.py): a
    request without a session cookie is anonymous here."""

    def process_request(self, request):
        timezone.deactivate()  # nothing kept from an earlier request on this thread
        request.time_zone = ""
        if request.path_info.startswith(JSON_PREFIXES):
            return
        zone = browser = zones.valid(request.COOKIES.get(zones.COOKIE))
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            chosen = request.session.get(ZONE_SESSION_KEY)
            if chosen is None:
                chosen = request.session[ZONE_SESSION_KEY] = selectors.chosen_time_zone(user)
            if browser and request.session.get(BROWSER_ZONE_SESSION_KEY) != browser:
                services.note_browser_time_zone(user=user, time_zone=browser)
                request.session[BROWSER_ZONE_SESSION_KEY] = browser
            zone = zones.valid(chosen) or browser
        if zone:
            timezone.activate(zone)
            request.time_zone = zone  # base.html hands it to the page scripts that format times

    def process_response(self, request, response):
        timezone.deactivate()
        return response


class SessionEndedMiddleware(MiddlewareMixin):
    """A browser that sent a session cookie and is sent to sign in before going on (`?next=`: not a
    logout's own redirect) while not signed in had its session end under it (expired, deleted on the
    server, a password changed elsewhere): the sign-in page says so. A click on Approve or Send turned
    into that page with no word of why. (That redirect deletes the cookie, so the sign-in page itself
    cannot tell; Django's messages carry it there.) After MessageMiddleware: its response comes first.
    A hook of the classic middleware's group (agui_project/handler.py): no thread hop of its own."""

    def process_response(self, request, response):
        # a POST sent to a page that needs a sign-in came from a page shown signed in: its session ended,
        # even when the browser had let the cookie go too (expired on the phone)
        if (response.status_code == 302 and (request.COOKIES.get(settings.SESSION_COOKIE_NAME) or request.method == "POST")
                and response.get("Location", "").startswith(f"{settings.LOGIN_URL}?next=")
                and not request.user.is_authenticated):
            if request.method == "POST":  # a decision, a message: refused, and the page moved on to sign in
                messages.warning(request, _("Your session had ended, so what you just sent (a decision, a message) "
                                            "was not sent. Log in again: the page comes back with what you typed, "
                                            "to send it again."))
            else:
                messages.info(request, _("Your session has ended. Log in again to go on where you were."))
        return response
