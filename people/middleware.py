"""A signed-in person's saved language wins over the browser's preference.

Runs after LocaleMiddleware (which has chosen from the language cookie, then Accept-Language,
then LANGUAGE_CODE) and AuthenticationMiddleware. The choice is read from the profile once per
session and kept in the session, so a page costs no query for it; the picker
(people.views.set_language) updates both.
"""

from django.utils import translation
from django.utils.deprecation import MiddlewareMixin

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
