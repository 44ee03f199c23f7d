"""Every API error is JSON with a `message` (and DRF's field errors alongside), in the language of
the answer (agui_project/language.py: activated once the caller is known)."""

from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_handler


def exception_handler(exc, context):
    if isinstance(exc, Http404):  # get_object_or_404's "No Thread matches the given query.": English, and a model name
        exc = exceptions.NotFound()
    response = drf_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict):
        if "detail" in data and "message" not in data:
            data["message"] = str(data.pop("detail"))
        else:
            data.setdefault("message", _("invalid input"))
    else:
        response.data = {"message": _("invalid input"), "errors": data}
    return response
