"""Every API error is JSON with a `message` (and DRF's field errors alongside)."""

from rest_framework.views import exception_handler as drf_handler


def exception_handler(exc, context):
    response = drf_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict):
        if "detail" in data and "message" not in data:
            data["message"] = str(data.pop("detail"))
        else:
            data.setdefault("message", "invalid input")
    else:
        response.data = {"message": "invalid input", "errors": data}
    return response
