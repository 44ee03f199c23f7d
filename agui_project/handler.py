"""Django's ASGI handler, with the classic middleware's hooks run on one thread hop per phase.

In Django's async chain a MiddlewareMixin middleware (sessions, CSRF, auth, messages, common,
X-Frame-Options) runs each of its hooks through sync_to_async: here 11 thread hops per request,
about 2 ms on a 2-core machine (POST /agui/<agent>/ -> RUN_STARTED, the decide API, a 404 alike).
Consecutive such middleware are run as one group: all their process_request hooks on one hop,
the inner chain in the caller's mode, all their process_response hooks on one hop. Order,
short-circuits and exception handling are those Django gives each middleware of its own
(convert_exception_to_response around every layer). A group of middleware whose hooks only read
settings and headers (INLINE: SecurityMiddleware) runs in the loop, without a hop.
A group of the session's middleware (SESSIONLESS_INLINE) runs in the loop too for a request
without a session cookie, unless it ends up writing the session: 6 -> 4 hops for a token client's 404.
settings.MIDDLEWARE is unchanged (the admin's and the deploy checks read it).
"""

import asyncio
import logging
from concurrent.futures import Executor, ThreadPoolExecutor
from contextvars import ContextVar, copy_context
from functools import partial

from asgiref.sync import (
    AsyncToSync,
    ThreadSensitiveContext,
    iscoroutinefunction,
    markcoroutinefunction,
    sync_to_async,
)
from django.conf import settings
from django.core import signals
from django.core.exceptions import ImproperlyConfigured, MiddlewareNotUsed, RequestAborted
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
from django.core.handlers.asgi import get_script_prefix
from django.core.handlers.exception import convert_exception_to_response, response_for_exception
from django.urls import set_script_prefix
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)

# hooks without I/O (settings, request headers, response headers, a redirect): no thread needed
INLINE = ("django.middleware.security.SecurityMiddleware",)
# hooks whose only I/O is the session's (its row, the signed-in user, the user's saved language and zone, messages
# kept in it): on a request without a session cookie (a token client: the REST API, AG-UI) the session
# is empty and the user anonymous, so a group of only these runs in the loop unless the request
# ended up writing the session (a sign-in) or new messages. Three thread hops fewer per request.
SESSIONLESS_INLINE = (
    "django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.locale.LocaleMiddleware",
    "agui_project.common.CommonMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware", "people.middleware.UserLanguageMiddleware",
    "people.middleware.TimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware", "people.middleware.SessionEndedMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "agui_project.private_pages.PrivateResponsesMiddleware",
)


def _groupable(cls):
    """A plain MiddlewareMixin: only process_request / process_view / process_response hooks."""
    return (isinstance(cls, type) and issubclass(cls, MiddlewareMixin)
            and cls.__call__ is MiddlewareMixin.__call__ and cls.__acall__ is MiddlewareMixin.__acall__
            and not hasattr(cls, "process_exception") and not hasattr(cls, "process_template_response"))


def _unused(request):  # what a member would call next; the group calls the chain itself
    raise AssertionError("a grouped middleware's get_response is never called")


class HookGroup:
    """Several MiddlewareMixin middleware (outermost first) as one layer of the chain."""

    sync_capable = True
    async_capable = True

    def __init__(self, classes, get_response, inline=False, paths=()):
        self.get_response, self.inline = get_response, inline
        self.sessionless_inline = bool(paths) and all(p in SESSIONLESS_INLINE for p in paths) \
            and not settings.CSRF_USE_SESSIONS and not settings.SESSION_SAVE_EVERY_REQUEST
        self.members = []
        for cls in classes:
            try:
                self.members.append(cls(_unused))
            except MiddlewareNotUsed:
                continue
        if not self.members:
            raise MiddlewareNotUsed
        self.views = [m.process_view for m in self.members if hasattr(m, "process_view")]
        if self.views:  # Django adds a hook (a hop of its own) for each layer that has one
            self.process_view = self._process_view
            if self.sessionless_inline and iscoroutinefunction(get_response):
                self.process_view = self._aprocess_view
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def enter(self, request, catch=True):
        """Each process_request in order: (a response that cuts the chain short or None, the
        index of the innermost member whose process_response runs). `catch=False` (an INLINE
        group, one member): an exception goes to the layer around the group, which turns it into
        a response on a thread (error pages may read the database) as the member's own would."""
        for i, member in enumerate(self.members):
            try:
                response = member.process_request(request) if hasattr(member, "process_request") else None
            except Exception as exc:  # its own layer turns it into a response; its response hook is skipped
                if not catch:
                    raise
                return response_for_exception(request, exc), i - 1
            if response is not None:
                return response, i
        return None, len(self.members) - 1

    def leave(self, request, response, last, catch=True):
        for member in reversed(self.members[:last + 1]):
            if hasattr(member, "process_response"):
                try:
                    response = member.process_response(request, response)
                except Exception as exc:
                    if not catch:
                        raise
                    response = response_for_exception(request, exc)
        return response

    def _process_view(self, request, view, args, kwargs):
        for hook in self.views:
            response = hook(request, view, args, kwargs)
            if response is not None:
                return response
        return None

    def _sessionless(self, request):
        return self.sessionless_inline and settings.SESSION_COOKIE_NAME not in request.COOKIES

    @staticmethod
    def _writes_session(request):
        """Whether the response hooks would save the session (a sign-in, new messages)."""
        session, messages = getattr(request, "session", None), getattr(request, "_messages", None)
        return bool((session is not None and session.modified)
                    or (messages is not None and (getattr(messages, "added_new", False) or messages._queued_messages)))

    async def _aprocess_view(self, request, view, args, kwargs):
        if self._sessionless(request):
            return self._process_view(request, view, args, kwargs)
        return await sync_to_async(self._process_view, thread_sensitive=True)(request, view, args, kwargs)

    async def _aenter(self, request):
        """enter() in the loop; a hook's exception becomes its response on a thread (error pages
        may read the database), as the member's own layer would make it."""
        for i, member in enumerate(self.members):
            try:
                response = member.process_request(request) if hasattr(member, "process_request") else None
            except Exception as exc:
                return await sync_to_async(response_for_exception, thread_sensitive=True)(request, exc), i - 1
            if response is not None:
                return response, i
        return None, len(self.members) - 1

    async def _aleave(self, request, response, last):
        for member in reversed(self.members[:last + 1]):
            if hasattr(member, "process_response"):
                try:
                    response = member.process_response(request, response)
                except Exception as exc:
                    response = await sync_to_async(response_for_exception, thread_sensitive=True)(request, exc)
        return response

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        response, last = self.enter(request)
        if response is None:
            response = self.get_response(request)
        return self.leave(request, response, last)

    async def __acall__(self, request):
        sessionless = self._sessionless(request)
        if self.inline:
            response, last = self.enter(request, catch=False)
        elif sessionless:
            response, last = await self._aenter(request)
        else:
            response, last = await sync_to_async(self.enter, thread_sensitive=True)(request)
        if response is None:
            response = await self.get_response(request)
        if self.inline:
            return self.leave(request, response, last, catch=False)
        if sessionless and not self._writes_session(request):
            return await self._aleave(request, response, last)
        return await sync_to_async(self.leave, thread_sensitive=True)(request, response, last)


def _group(classes, inline=False, paths=()):
    factory = partial(HookGroup, classes, inline=inline, paths=tuple(paths))
    factory.sync_capable = factory.async_capable = True
    return " + ".join(c.__qualname__ for c in classes), factory


def middleware_layers(paths):
    """settings.MIDDLEWARE as (name, factory) layers: a class as it is, a run of groupable ones as
    one HookGroup, an INLINE one as a HookGroup that stays in the loop."""
    layers, run, run_paths = [], [], []

    def close_run():
        if run:
            layers.append(_group(list(run), paths=list(run_paths)))
            run.clear()
            run_paths.clear()

    for path in paths:
        cls = import_string(path)
        if path in INLINE and _groupable(cls):
            close_run()
            layers.append(_group([cls], inline=True))
        elif _groupable(cls):
            run.append(cls)
            run_paths.append(path)
        else:
            close_run()
            layers.append((path, cls))
    close_run()
    return layers


# idle request threads kept for the next requests; more than this many idle at once are let go
IDLE_REQUEST_THREADS = 8


class RequestThread(Executor):
    """The one thread a request's sync code runs on (asgiref runs a request's thread-sensitive calls
    on the executor its ThreadSensitiveContext owns): taken from the idle ones at the request's first
    sync call, given back at its end, or earlier by release() (a request about to wait long).
    `first`: what runs on it before that first call (request_started's receivers, see ASGIHandler)."""

    def __init__(self, idle):
        self._idle, self._executor, self.first = idle, None, None
        # work for after the response (agui_project/answer_first.py), whether later() defers to it
        # now, whether it ever did in this request, and whether the response is done (later() runs
        # the work at once then: nothing would run it)
        self.after, self.answer_first, self.defers, self.closing = [], False, False, False

    def submit(self, fn, /, *args, **kwargs):
        if self._executor is None:
            self._executor = self._idle.pop() if self._idle else ThreadPoolExecutor(1, "request")
        if self.first is not None:
            first, self.first = self.first, None
            return self._executor.submit(_after, first, fn, *args, **kwargs)
        return self._executor.submit(fn, *args, **kwargs)

    def run_after(self):
        """What later() kept (agui_project/answer_first.py), in turn, once the response is sent or the
        client has gone. One that fails is logged and does not stop the rest: the answer is out, and
        nobody else would hear of it."""
        work, self.after = self.after, []
        for fn in work:
            try:
                fn()
            except Exception:
                log.exception("work after the response failed: %r", fn)

    def release(self):
        """Give the thread back (nothing may run on it for this request now); a later sync call of
        the request takes one again."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if len(self._idle) < IDLE_REQUEST_THREADS:
            self._idle.append(executor)
        else:
            executor.shutdown(wait=False)

    def shutdown(self, wait=True, *, cancel_futures=False):
        self.release()


def _after(first, fn, /, *args, **kwargs):
    first()
    return fn(*args, **kwargs)


async def _rendered(response):
    """A response ASGIHandler.make_view_atomic rendered: its own render method again, and itself."""
    del response.render
    return response


_request_thread = ContextVar("request_thread", default=None)


def request_thread():
    """The running request's RequestThread, or None (not a request of this handler)."""
    return _request_thread.get()


class ASGIHandler(DjangoASGIHandler):
    """Django's ASGIHandler: the classic middleware grouped (middleware_layers), and each request's
    sync code on a thread kept from an earlier request. Django enters a new ThreadSensitiveContext
    per request, which starts a thread for the request's first sync call and ends it after: about
    0.5 ms a request here. asgiref lets the caller own that executor, so a request still has one
    thread to itself for its life (RequestThread), taken from the idle ones. What a request leaves on
    its thread: its database connections are closed by request_finished (close_old_connections),
    which Django sends on that thread, cancelled or not.

    request_started is sent on the request's thread too, as the start of its first sync call,
    instead of on a hop of its own before the request is made (see handle)."""

    def __init__(self):
        super().__init__()
        self._idle_threads = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or getattr(AsyncToSync.executors, "current", None) is not None:
            # Django's refusal; or called through async_to_sync (a test), whose thread runs the sync code
            return await super().__call__(scope, receive, send)
        thread = RequestThread(self._idle_threads)
        token = _request_thread.set(thread)
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, receive, send)
        finally:
            _request_thread.reset(token)
            thread.release()

    async def handle(self, scope, receive, send):
        """Django 5.2's ASGIHandler.handle, but for request_started. Django awaits it first, and its
        receivers (reset_queries, close_old_connections: the thread's database connections) are
        sync, so that is a thread hop of its own, about 0.35 ms of every request here (a traced POST
        /agui/: 0.48 -> 0.85 ms after its body arrived). Here the signal is sent as WSGI sends it,
        synchronously on the request's thread, ahead of the first sync call the request makes
        there: before any of its code touches that thread's connections, once. Every request makes
        one (the response's close, or request_finished when it is cancelled). Its receivers run in
        a copy of the request's context as it was here; what they change there is not carried
        back. A request outside a RequestThread (called through async_to_sync) gets Django's own."""
        thread = request_thread()
        if thread is None:
            return await super().handle(scope, receive, send)
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        thread.first = partial(copy_context().run, signals.request_started.send, sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            await sync_to_async(error_response.close)()
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client went during send_response
            return response

        # the rest as Django's: a disconnect while the response is made cancels it
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)),
                 asyncio.create_task(process_request(request, send))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        thread.closing = True
        if thread.defers:
            # sent, or the client went: on the request's thread, before its connections close. A view
            # cancelled with the client still runs there to its end, and this waits behind it.
            await sync_to_async(thread.run_after, thread_sensitive=True)()
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            await sync_to_async(response.close)()
        body_file.close()

    def make_view_atomic(self, view):
        """Django's, and a sync view's response rendered on the view's own thread hop. Django's async
        chain renders a response that has `render` (DRF's Response, a TemplateResponse: every API
        answer and page) on a hop of its own after the view's, when that render is sync: two more
        crossings between the loop and the request's thread, 0.2-3 ms a decide API call on a busy
        2-core machine (traced). Here the view's call renders too, and leaves the response an async
        `render` that Django awaits in the loop (it gives the method back: nothing renders twice).
        An exception in the render meets the view's exception handling, as Django's own render's
        does. Not when template-response middleware must see the response before its render."""
        view = super().make_view_atomic(view)
        if iscoroutinefunction(view) or self._template_response_middleware:
            return view

        def view_and_render(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            render = getattr(response, "render", None)
            if callable(render) and not iscoroutinefunction(render):
                response = render()
                response.render = partial(_rendered, response)
            return response

        return view_and_render

    def load_middleware(self, is_async=False):
        """BaseHandler.load_middleware (Django 5.2), over middleware_layers() instead of each path."""
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []

        get_response = self._get_response_async if is_async else self._get_response
        handler = convert_exception_to_response(get_response)
        handler_is_async = is_async
        for name, middleware in reversed(middleware_layers(settings.MIDDLEWARE)):
            middleware_can_sync = getattr(middleware, "sync_capable", True)
            middleware_can_async = getattr(middleware, "async_capable", False)
            if not middleware_can_sync and not middleware_can_async:
                raise RuntimeError(f"Middleware {name} must have at least one of sync_capable/async_capable set to True.")
            elif not handler_is_async and middleware_can_sync:
                middleware_is_async = False
            else:
                middleware_is_async = middleware_can_async
            try:
                adapted_handler = self.adapt_method_mode(middleware_is_async, handler, handler_is_async,
                                                         debug=settings.DEBUG, name=f"middleware {name}")
                mw_instance = middleware(adapted_handler)
            except MiddlewareNotUsed:
                continue
            else:
                handler = adapted_handler
            if mw_instance is None:
                raise ImproperlyConfigured(f"Middleware factory {name} returned None.")
            if hasattr(mw_instance, "process_view"):
                self._view_middleware.insert(0, self.adapt_method_mode(is_async, mw_instance.process_view))
            if hasattr(mw_instance, "process_template_response"):
                self._template_response_middleware.append(
                    self.adapt_method_mode(is_async, mw_instance.process_template_response))
            if hasattr(mw_instance, "process_exception"):
                self._exception_middleware.append(self.adapt_method_mode(False, mw_instance.process_exception))
            handler = convert_exception_to_response(mw_instance)
            handler_is_async = middleware_is_async
        handler = self.adapt_method_mode(is_async, handler, handler_is_async)
        self._middleware_chain = handler


def get_asgi_application():
    """django.core.asgi.get_asgi_application, with this handler, in a web process: its PostgreSQL
    connections wait at most AGUI_WEB_LOCK_TIMEOUT for a row lock."""
    import django

    django.setup(set_prefix=False)
    bound_lock_waits()
    return ASGIHandler()


def bound_lock_waits():
    """A web request waited for a row lock as long as it was held (a locking migration, a long admin
    transaction, a reviewer's decision on a stuck row): ten such waits held the process's whole pool
    and every other request got a 503 after 10 s. With `lock_timeout` (a startup option of each new
    connection: no round trip) the wait ends in 55P03, answered 503 `database_busy` with a sentence
    (agui_project/busy.py). Web processes only: a worker's run waits its turn. 0 turns it off (a
    pooler that refuses startup options, PgBouncer's, takes it as `ignore_startup_parameters`)."""
    db, seconds = settings.DATABASES["default"], settings.AGUI_WEB_LOCK_TIMEOUT
    if db["ENGINE"].endswith("postgresql") and seconds:
        options = db.setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c lock_timeout={int(seconds * 1000)}".strip()
