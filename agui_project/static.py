"""Static files through WhiteNoise without making every request synchronous.

WhiteNoiseMiddleware is sync-only, and one sync-only middleware makes Django run the whole
chain in a worker thread and the async views (the AG-UI SSE endpoint) through async_to_sync:
measured on POST /agui/<agent>/ -> RUN_STARTED, about 8 ms of thread hops per request. This
wrapper asks WhiteNoise only for paths under STATIC_URL and otherwise stays in the caller's mode.
"""

from asgiref.sync import sync_to_async
from whitenoise.middleware import WhiteNoiseMiddleware

from .middleware import DualModeMiddleware


class StaticFilesMiddleware(DualModeMiddleware):
    def __init__(self, get_response):
        super().__init__(get_response)
        self.whitenoise = WhiteNoiseMiddleware(get_response)  # reads STATIC_*/WHITENOISE_* settings

    def _static(self, request):
        """WhiteNoise's response for a static file, else None."""
        wn = self.whitenoise
        found = wn.find_file(request.path_info) if wn.autorefresh else wn.files.get(request.path_info)
        return wn.serve(found, request) if found is not None else None

    def sync_call(self, request):
        if request.path_info.startswith(self.whitenoise.static_prefix):
            response = self._static(request)
            if response is not None:
                return response
        return self.get_response(request)

    async def __acall__(self, request):
        if request.path_info.startswith(self.whitenoise.static_prefix):
            response = await sync_to_async(self._static)(request)  # file lookups and opens block
            if response is not None:
                return response
        return await self.get_response(request)
