"""A base for middleware that runs in the mode of the chain around it.

Django puts a sync-only middleware (and everything inside it) on a worker thread, and the async
views behind it (the AG-UI SSE endpoint) through async_to_sync: thread hops on every request.
"""

from asgiref.sync import iscoroutinefunction, markcoroutinefunction


class DualModeMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        return self.__acall__(request) if self.is_async else self.sync_call(request)

    def sync_call(self, request):
        raise NotImplementedError

    async def __acall__(self, request):
        raise NotImplementedError
