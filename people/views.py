"""The header's language picker: Django's set_language (cookie, safe redirect), plus the
person's profile, so the choice follows them to other browsers and into their mail."""

from django.conf import settings
from django.views.decorators.http import require_POST
from django.views.i18n import set_language as django_set_language

from . import services
from .middleware import SESSION_KEY


@require_POST
def set_language(request):
    response = django_set_language(request)
    language = request.POST.get("language", "")
    if language in dict(settings.LANGUAGES) and request.user.is_authenticated:
        services.set_language(user=request.user, language=language)
        request.session[SESSION_KEY] = language
    return response
