"""The Content-Security-Policy header (settings.CONTENT_SECURITY_POLICY), by django-csp.

django-csp's middleware is a MiddlewareMixin: in the async chain each of its two hooks would run
through sync_to_async (a thread hop, on the one shared sync thread, for every request including
the AG-UI SSE endpoint). Both hooks only read settings and set a header, so this wrapper calls
them directly in whichever mode the chain runs.
"""

from csp.middleware import CSPMiddleware as _DjangoCSPMiddleware

from .middleware import DualModeMiddleware


class CSPMiddleware(DualModeMiddleware):
    def __init__(self, get_response):
        super().__init__(get_response)
        self.csp = _DjangoCSPMiddleware(get_response)

    def sync_call(self, request):
        self.csp.process_request(request)
        return self.csp.process_response(request, self.get_response(request))

    async def __acall__(self, request):
        self.csp.process_request(request)
        return self.csp.process_response(request, await self.get_response(request))
