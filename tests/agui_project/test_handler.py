"""agui_project/handler.py: the ASGI chain runs the classic middleware's hooks on one thread hop
per phase, with the order, short-circuits and exception handling of Django's own chain."""

import asyncio
import threading

import asgiref.sync
import pytest
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
from django.http import HttpResponse
from django.template.response import SimpleTemplateResponse
from django.test import override_settings
from django.urls import path as url
from django.utils.deprecation import MiddlewareMixin

from agui_project import handler
from agui_project.handler import ASGIHandler, middleware_layers
from tests.helpers import asgi_get

CALLS = []


def _recording(tag, request_returns=None, request_raises=None, response_raises=None):
    class Recording(MiddlewareMixin):
        def process_request(self, request):
            CALLS.append(f"{tag}.request")
            if request_raises and request.path.endswith(f"/{tag}-raises/"):
                raise request_raises
            if request_returns and request.path.endswith(f"/{tag}-answers/"):
                return HttpResponse(f"answered by {tag}", status=299)
            return None

        def process_view(self, request, view, args, kwargs):
            CALLS.append(f"{tag}.view")

        def process_response(self, request, response):
            CALLS.append(f"{tag}.response")
            if response_raises and request.path.endswith(f"/{tag}-response-raises/"):
                raise response_raises
            response[f"X-{tag}"] = "seen"
            return response

    Recording.__qualname__ = Recording.__name__ = f"Recording{tag}"
    return Recording


A = _recording("a")
B = _recording("b", request_returns=True, request_raises=PermissionDenied(), response_raises=PermissionDenied())
C = _recording("c")
MIDDLEWARE = [f"{__name__}.{name}" for name in ("A", "B", "C")]


async def call(app, path, headers=()):
    return (await asgi_get(app, path, headers))[:2]


def run_both(path):
    """(status, headers, hook calls) from Django's handler and from ours."""
    out = []
    for handler_class in (DjangoASGIHandler, ASGIHandler):
        app = handler_class()
        CALLS.clear()
        status, headers = asyncio.run(call(app, path))
        out.append((status, {k: v for k, v in headers.items() if k.startswith("x-")}, list(CALLS)))
    return out


@pytest.mark.parametrize("inline", [False, True, "sessionless"])
@pytest.mark.parametrize("path", ["/no-such-page/", "/b-answers/", "/b-raises/", "/b-response-raises/"])
@override_settings(MIDDLEWARE=MIDDLEWARE, ROOT_URLCONF="agui_project.urls")
def test_grouped_hooks_behave_as_djangos_chain(path, inline, monkeypatch):
    if inline == "sessionless":  # the group's hooks in the loop (the request has no session cookie)
        monkeypatch.setattr(handler, "SESSIONLESS_INLINE", tuple(MIDDLEWARE))
    elif inline:  # B's hooks called in the loop, A and C each a group of one
        monkeypatch.setattr(handler, "INLINE", (f"{__name__}.B",))
    django_result, ours = run_both(path)
    assert ours == django_result
    status, headers, calls = ours
    if path == "/b-answers/":  # a short-circuit: C never runs, B's and A's responses do
        assert (status, calls) == (299, ["a.request", "b.request", "b.response", "a.response"])
    if path == "/b-raises/":  # B's layer turns it into a 403; B's own response hook is skipped
        assert (status, calls) == (403, ["a.request", "b.request", "a.response"])
        assert headers == {"x-a": "seen"}


def test_runs_of_classic_middleware_are_one_layer_each(settings):
    assert [name for name, _ in middleware_layers(MIDDLEWARE)] == ["Recordinga + Recordingb + Recordingc"]
    assert [name for name, _ in middleware_layers(settings.MIDDLEWARE)] == [
        "agui_project.health.ProbeMiddleware", "agui_project.limits.RequestLimitsMiddleware", "SecurityMiddleware", "agui_project.static.StaticFilesMiddleware",
        "agui_project.csp.CSPMiddleware", "SessionMiddleware + LocaleMiddleware + CommonMiddleware + CsrfViewMiddleware + "
        "AuthenticationMiddleware + UserLanguageMiddleware + TimeZoneMiddleware + MessageMiddleware + "
        "SessionEndedMiddleware + "
        "XFrameOptionsMiddleware + PrivateResponsesMiddleware", "approvals.account_audit.AskingMiddleware"]


@pytest.mark.parametrize("cookie, most", [(None, 3), ("sessionid=nothing-valid", 5)])
@pytest.mark.django_db(transaction=True)
def test_a_request_through_the_project_chain_makes_few_thread_hops(cookie, most):
    """The project's MIDDLEWARE: the 404 and its log line, and the response's close (request_finished;
    request_started rides on the first); Django's own chain made 16 for this 404. The classic middleware's hooks
    run in the loop for a request without a session cookie (a token client's), and on one hop per
    phase for one with a session, which they may read."""
    hops = []
    original = asgiref.sync.SyncToAsync.__call__

    async def counting(self, *args, **kwargs):
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    asgiref.sync.SyncToAsync.__call__ = counting
    try:
        status, headers = asyncio.run(call(ASGIHandler(), "/api/no-such-route/",
                                           [(b"cookie", cookie.encode())] if cookie else []))
    finally:
        asgiref.sync.SyncToAsync.__call__ = original
    assert status == 404
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert len(hops) <= most, hops
    assert ("HookGroup.enter" in hops) == bool(cookie)


@pytest.mark.django_db(transaction=True)
def test_a_sign_in_without_a_session_cookie_saves_its_session_through_the_async_chain(demo, settings):
    """A request without a session cookie runs the hooks in the loop, but one that ends up writing
    the session (signing in) has its response hooks on a thread, where the session is saved: the
    cookie it gets names a stored session of that user."""
    from django.contrib.sessions.models import Session

    async def post(path, body, cookies):
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "path": path,
                 "raw_path": path.encode(), "query_string": b"", "client": ("127.0.0.1", 1),
                 "server": ("testserver", 80), "scheme": "http", "root_path": "",
                 "headers": [(b"host", b"testserver"), (b"content-type", b"application/x-www-form-urlencoded"),
                             (b"content-length", str(len(body)).encode()), (b"cookie", cookies.encode())]}
        sent, got = [], False

        async def receive():
            nonlocal got
            if not got:
                got = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)

        await ASGIHandler()(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        return start["status"], [v.decode() for k, v in start["headers"] if k.lower() == b"set-cookie"]

    csrf = "a" * 32
    body = f"username=finn&password={settings.DEMO_PASSWORD}&csrfmiddlewaretoken={csrf}".encode()
    status, cookies = asyncio.run(post("/accounts/login/", body, f"csrftoken={csrf}"))
    assert status == 302, cookies
    session_key = next(c.split(";")[0].split("=", 1)[1] for c in cookies if c.startswith(settings.SESSION_COOKIE_NAME))
    stored = Session.objects.get(session_key=session_key).get_decoded()
    assert stored["_auth_user_id"] == str(demo["finn"].pk)


THREADS, SECOND_RAN = [], threading.Event()


def _record_thread(request):
    THREADS.append(threading.get_ident())
    return HttpResponse("ok")


def _wait_for_the_second(request):
    """Holds its thread until the second request's view has run: on a shared thread it never would."""
    THREADS.append(threading.get_ident())
    return HttpResponse("ok" if SECOND_RAN.wait(10) else "the second request never ran", status=200)


def _second(request):
    THREADS.append(threading.get_ident())
    SECOND_RAN.set()
    return HttpResponse("ok")


urlpatterns = [url("record/", _record_thread), url("wait/", _wait_for_the_second), url("second/", _second)]


@override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__)
def test_a_request_runs_its_sync_code_on_a_thread_kept_from_an_earlier_request():
    """Django starts a thread for every request (about 0.5 ms here); ours takes an idle one. One
    request still has its thread to itself while it runs: two at once get two threads."""
    THREADS.clear()
    SECOND_RAN.clear()
    app = ASGIHandler()

    async def main():
        for _ in range(3):
            assert (await call(app, "/record/"))[0] == 200
        first = asyncio.ensure_future(call(app, "/wait/"))
        await asyncio.sleep(0)  # the first request takes its thread before the second arrives
        assert (await call(app, "/second/"))[0] == 200
        assert (await first)[0] == 200

    asyncio.run(main())
    one, two, three, waiting, second = THREADS
    assert one == two == three != threading.get_ident()  # kept, and not the loop's
    assert waiting != second and SECOND_RAN.is_set()


EVENTS = []


def _on_signal(signal, sender, scope=None, **kwargs):
    from django.core.signals import request_started

    name = "started" if signal is request_started else "finished"
    EVENTS.append((name, threading.get_ident(), scope and scope["path"]))


def _sync_view(request):
    EVENTS.append(("view", threading.get_ident(), None))
    return HttpResponse("ok")


async def _async_view(request):
    EVENTS.append(("async view", None, None))
    return HttpResponse("ok")


urlpatterns += [url("sync/", _sync_view), url("async/", _async_view)]


@override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__)
def test_request_started_is_sent_once_on_the_requests_thread_before_its_sync_code():
    """Sent as Django sends it (once per request, with its scope), on the thread that runs the
    request's sync code (where close_old_connections acts) and before any of that code, but not on
    a thread hop of its own. A request none of whose own code is sync gets it too, before
    request_finished (the response's close is its first sync call)."""
    from django.core.signals import request_finished, request_started

    EVENTS.clear()
    app = ASGIHandler()
    request_started.connect(_on_signal)
    request_finished.connect(_on_signal)
    try:
        for path in ("/sync/", "/sync/", "/async/"):
            assert asyncio.run(call(app, path))[0] == 200
    finally:
        request_started.disconnect(_on_signal)
        request_finished.disconnect(_on_signal)
    names = [name for name, _thread, _path in EVENTS]
    assert names == ["started", "view", "finished"] * 2 + ["async view", "started", "finished"]
    assert [path for name, _t, path in EVENTS if name == "started"] == ["/sync/", "/sync/", "/async/"]
    threads = [thread for _name, thread, _path in EVENTS if thread is not None]
    assert len(set(threads)) == 1 and threads[0] != threading.get_ident()  # the kept request thread


def test_what_the_asgi_module_made_at_start_is_left_out_of_the_collectors_passes():
    import gc

    import agui_project.asgi  # noqa: F401  (Daphne's application module)

    assert gc.get_freeze_count() > 10_000


RENDERS = []


class _Rendered(SimpleTemplateResponse):
    """A deferred-render response (as DRF's Response and TemplateResponse are) that records where it renders."""

    def __init__(self, fail=False):
        super().__init__(template="unused")
        self.fail = fail

    @property
    def rendered_content(self):
        RENDERS.append(("render", threading.get_ident()))
        if self.fail:
            raise ValueError("the template broke")
        return "rendered"


def _deferred_view(request):
    RENDERS.append(("view", threading.get_ident()))
    return _Rendered(fail=request.path.endswith("/broken/"))


class SeesTemplateResponses:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_template_response(self, request, response):
        RENDERS.append(("middleware", response.is_rendered))
        return response


urlpatterns += [url("deferred/", _deferred_view), url("deferred/broken/", _deferred_view)]


def handler500(request):  # this module as ROOT_URLCONF: an error page that needs none of the project's URLs
    return HttpResponse("server error", status=500)


async def _call_with_body(app, path):
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "path": path,
             "raw_path": path.encode(), "query_string": b"", "headers": [(b"host", b"testserver")],
             "client": ("127.0.0.1", 1), "server": ("testserver", 80), "scheme": "http", "root_path": ""}
    sent, got = [], []

    async def receive():
        if not got:
            got.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    status = next(m for m in sent if m["type"] == "http.response.start")["status"]
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _hops_of(app, path):
    hops, original = [], asgiref.sync.SyncToAsync.__call__

    async def counting(self, *args, **kwargs):
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    asgiref.sync.SyncToAsync.__call__ = counting
    try:
        return asyncio.run(_call_with_body(app, path)), hops
    finally:
        asgiref.sync.SyncToAsync.__call__ = original


@override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__)
def test_a_sync_views_deferred_response_renders_on_the_views_own_hop():
    """Django renders it on a hop of its own after the view's; here the view's call renders it."""
    RENDERS.clear()
    (status, body), hops = _hops_of(DjangoASGIHandler(), "/deferred/")
    assert (status, body) == (200, b"rendered")
    assert "SimpleTemplateResponse.render" in hops  # what Django's own chain does
    (view, view_thread), (_render, django_render_thread) = RENDERS

    RENDERS.clear()
    (status, body), hops = _hops_of(ASGIHandler(), "/deferred/")
    assert (status, body) == (200, b"rendered")
    assert len(hops) == 2 and hops[1] == "HttpResponseBase.close", hops  # the view (and its render), the close
    assert RENDERS == [("view", RENDERS[0][1]), ("render", RENDERS[0][1])]


@override_settings(MIDDLEWARE=[], ROOT_URLCONF=__name__, DEBUG=False)
def test_a_render_that_fails_is_answered_as_djangos_chain_answers_it():
    statuses = [asyncio.run(_call_with_body(cls(), "/deferred/broken/"))[0] for cls in (DjangoASGIHandler, ASGIHandler)]
    assert statuses == [500, 500]


@override_settings(MIDDLEWARE=[f"{__name__}.SeesTemplateResponses"], ROOT_URLCONF=__name__)
def test_template_response_middleware_still_sees_the_response_before_its_render():
    RENDERS.clear()
    status, body = asyncio.run(_call_with_body(ASGIHandler(), "/deferred/"))
    assert (status, body) == (200, b"rendered")
    assert [name for name, _ in RENDERS] == ["view", "middleware", "render"]
    assert RENDERS[1] == ("middleware", False)
