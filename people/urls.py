from django.urls import path
from django.views.i18n import JavaScriptCatalog

from . import views

urlpatterns = [
    path("i18n/setlang/", views.set_language, name="set_language"),
    path("settings/", views.settings_page, name="people-settings"),  # language, time zone, inbox keys
    # the static/js/ strings, for the active language (Django's gettext/ngettext/interpolate)
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
]
