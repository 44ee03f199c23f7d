"""The header's language picker: Django's set_language (cookie, safe redirect), plus the
person's profile, so the choice follows them to other browsers and into their mail; the settings
page: their language, time zone and the inbox's single-key shortcuts."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST
from django.views.i18n import set_language as django_set_language

from . import selectors, services, zones
from .forms import SettingsForm
from .middleware import BROWSER_ZONE_SESSION_KEY, SESSION_KEY, ZONE_SESSION_KEY


@require_POST
def set_language(request):
    response = django_set_language(request)
    language = request.POST.get("language", "")
    if language in dict(settings.LANGUAGES) and request.user.is_authenticated:
        services.set_language(user=request.user, language=language)
        request.session[SESSION_KEY] = language
    return response


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request):
    saved_zone = selectors.chosen_time_zone(request.user)
    form = SettingsForm(request.POST if request.method == "POST" else None, initial={
        "language": selectors.language_of(request.user), "time_zone": saved_zone,
        "inbox_keys": selectors.inbox_keys_on(request.user)})
    if form.is_bound and form.is_valid():
        language, zone = form.cleaned_data["language"], form.cleaned_data["time_zone"]
        services.save_settings(user=request.user, language=language, time_zone=zone,
                               inbox_keys=form.cleaned_data["inbox_keys"])
        request.session[SESSION_KEY], request.session[ZONE_SESSION_KEY] = language, zone
        # the message in the language chosen (or, for "your browser's", the one this request had)
        with translation.override(language or request.LANGUAGE_CODE):
            messages.success(request, _("Your settings are saved."))
        response = redirect("people-settings")
        if language:  # as Django's set_language: the cookie LocaleMiddleware reads, for pages before sign-in
            response.set_cookie(settings.LANGUAGE_COOKIE_NAME, language, max_age=settings.LANGUAGE_COOKIE_AGE,
                                path=settings.LANGUAGE_COOKIE_PATH, domain=settings.LANGUAGE_COOKIE_DOMAIN,
                                secure=settings.LANGUAGE_COOKIE_SECURE, httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
                                samesite=settings.LANGUAGE_COOKIE_SAMESITE)
        else:
            response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH,
                                   domain=settings.LANGUAGE_COOKIE_DOMAIN, samesite=settings.LANGUAGE_COOKIE_SAMESITE)
        return response
    shown_zone = form["time_zone"].value() or ""
    return render(request, "people/settings.html", {
        "form": form, "zones": zones.choices(zones.valid(shown_zone) or saved_zone), "chosen_zone": shown_zone,
        "browser_zone": zones.valid(request.COOKIES.get(zones.COOKIE))
        or request.session.get(BROWSER_ZONE_SESSION_KEY, ""),
    }, status=400 if form.is_bound else 200)
