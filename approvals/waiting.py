"""GET /api/approvals/<id>/?wait=N: hold the answer until the request is answered or N seconds
pass (at most MAX_WAIT), without holding a worker or a thread while waiting.

The detail route's DRF view stays as it is (permissions, visibility, the serializer, OpenAPI);
this async wrapper runs it once to see the request, then waits on the event loop: `asyncio.sleep`
(which holds nothing) with a backoff from 0.2 s to 2 s, and between sleeps a status read of the
row on the loop's shared thread pool (a few milliseconds, like any pooled call). Then it runs the
DRF view again for the answer. A poll of the row rather than a pub/sub message: the row is the
truth whichever process decided, and a lost message cannot leave a client hanging.

The ASGI handler gives every request a thread of its own for its sync parts, kept (idle) until the
response ends: 20 waiting agents were 18 more threads in Daphne. Before waiting, this closes that
thread's database connection and gives the thread back (agui_project/handler.py); the answer's
sync parts take one again. Under the test clients there is no such thread: the view runs on the
caller's, which is left alone.
"""

import asyncio
import functools

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections
from django.http import JsonResponse
from django.utils.translation import gettext as _

from agui_project import auth, handler, language
from agui_project.queries import one

from .models import ApprovalRequest

MAX_WAIT = 60
FIRST_POLL, LAST_POLL = 0.2, 2.0


def parse_wait(raw):
    """Seconds to wait, or a message saying why the value is refused."""
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        return None, _("wait must be a number of seconds from 0 to %(max)s") % {"max": MAX_WAIT}
    if not 0 <= seconds <= MAX_WAIT:
        return None, _("wait must be from 0 to %(max)s seconds (asked %(asked)s); ask again to wait longer") % {
            "max": MAX_WAIT, "asked": raw}
    return seconds, None


def _refused_wait(request):
    """400 for a ?wait out of bounds of a request the caller may see: in the language the view
    answered in (a token caller's own, agui_project/language.py)."""
    language.for_error(request, auth.header_user(request))
    problem = parse_wait(request.GET["wait"])[1]
    return JsonResponse({"message": problem, "code": "invalid_wait", "wait": [problem]}, status=400)


def _read_status(pk):
    close_old_connections()  # a pooled thread: the request lifecycle's connection rules, by hand
    try:
        return one(ApprovalRequest.objects.filter(pk=pk).values_list("status", flat=True))
    finally:
        close_old_connections()


_status = sync_to_async(_read_status, thread_sensitive=False)


async def _let_the_request_thread_go():
    """Close the request's own sync thread's connections and give that thread back (see above)."""
    thread = handler.request_thread()
    if thread is not None:
        await sync_to_async(connections.close_all)()
        thread.release()


def long_poll(view):
    """The async form of the detail view: with ?wait on a GET it waits, else it is the view."""
    sync_view = sync_to_async(view)

    async def detail(request, *args, **kwargs):
        if request.method != "GET" or "wait" not in request.GET:
            return await sync_view(request, *args, **kwargs)
        seconds, problem = parse_wait(request.GET["wait"])
        # who may see it, and whether it exists, asked first also of a bad ?wait: a caller not signed
        # in, or asking of a request not theirs, hears that and no more
        response = await sync_view(request, *args, **kwargs)
        if problem and response.status_code == 200:
            return await sync_to_async(_refused_wait)(request)
        if problem or response.status_code != 200 or response.data.get("status") != ApprovalRequest.Status.PENDING:
            return response
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + seconds, FIRST_POLL
        if seconds > 0:
            await _let_the_request_thread_go()
        pk = kwargs.get("pk")
        while (left := deadline - loop.time()) > 0:
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 1.5, LAST_POLL)
            if await _status(pk) != ApprovalRequest.Status.PENDING:
                break
        return await sync_view(request, *args, **kwargs)

    functools.update_wrapper(detail, view)  # keeps cls/actions/csrf_exempt for DRF's and the schema's readers
    del detail.__wrapped__  # Django must see the coroutine function, not the sync view behind it
    return detail
