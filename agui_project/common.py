"""Django's CommonMiddleware, except for the REST API's trailing slash.

APPEND_SLASH answers `POST /api/approvals` (no slash) with a RuntimeError under DEBUG and, with
DEBUG off, a 301 that clients follow with a GET, losing the body. HTTP clients and SDKs written
elsewhere often drop the slash, so under /api/ a path that only resolves with it is served as if
it had it (no redirect); pages keep Django's redirect.
"""

from django.middleware import common


class CommonMiddleware(common.CommonMiddleware):
    def process_request(self, request):
        if request.path_info.startswith("/api/") and self.should_redirect_with_slash(request):
            request.path_info += "/"
            request.path += "/"
        return super().process_request(request)
