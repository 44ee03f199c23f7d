"""Every API error is JSON with a `message` (and DRF's field errors alongside), in the language of
the answer (agui_project/language.py: activated once the caller is known)."""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_handler

from .auth import TokenRefused


def exception_handler(exc, context):
    if isinstance(exc, Http404):  # get_object_or_404's "No Thread matches the given query.": English, and a model name
        exc = exceptions.NotFound()
    if isinstance(exc, PermissionDenied) and exc.args:  # a service's refusal says why; DRF's would not
        exc = exceptions.PermissionDenied(str(exc.args[0]))
    if isinstance(exc, exceptions.ParseError) and str(exc.detail).startswith("JSON parse error"):
        # DRF's JSONParser says "JSON parse error - Expecting value: line 1 column 1 (char 0)": English
        # and Python's; said as the AG-UI endpoint says it
        response = drf_handler(exc, context)
        response.data = {"message": _("the body is not JSON"), "code": "malformed_body",
                         "errors": {"body": [_("not valid JSON")]}}
        return response
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
        data = response.data = {"message": _("invalid input"), "errors": data}
    # a program reads the code (the sentence is translated): DRF's own (not_authenticated,
    # permission_denied, not_found, method_not_allowed, throttled, ...), invalid_input for field errors
    data.setdefault("code", "invalid_input" if isinstance(exc, exceptions.ValidationError)
                    else getattr(getattr(exc, "detail", None), "code", None) or exc.default_code)
    if isinstance(exc, TokenRefused):
        data["reason"] = exc.reason
    return response
