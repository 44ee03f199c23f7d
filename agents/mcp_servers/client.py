"""The client side of MCP, on the official `mcp` SDK: one asyncio loop per process, long-lived sessions.

Workers are synchronous (Celery) and the SDK is asyncio. A session per call would start the
server again for every call (a Python or Node process: 0.3-1 s each) and could not hear
`notifications/tools/list_changed` between calls; so each process keeps one daemon thread
running an event loop (started on first use, again after a fork: prefork children each get
their own), and in it a small pool of open sessions per server. A synchronous caller hands a
coroutine to that loop and waits for its answer (`run_coroutine_threadsafe`): the hop costs
tens of microseconds. One session carries one call at a time, so a server's `elicitation/create`
belongs to the call that session is making; a second concurrent call opens a second session.

A call may be parked at the server's question (Streamable HTTP with resumable streams: the server
gave an Mcp-Session-Id and SSE event ids): `call` returns Parked with what a later process needs
(the session id, the initialize result, the request's first event id, the question's JSON-RPC
id), and the session is let go here without being ended on the server: the question is left
unanswered, no DELETE is sent. `resume` opens a session under that id (no new initialize: the
stored result is adopted), sends the same tools/call as a resumption (GET with Last-Event-ID:
the SDK's ClientMessageMetadata.resumption_token), the server replays the question, the SDK sends
the person's answer as its JSON-RPC response, and the stream goes on to the call's result.

Errors are sorted by what they mean for the call:
- Unreachable: the server could not be started, connected or initialised: nothing was sent.
- Refused: the server answered the call with a protocol error (unknown tool, bad params): not run.
- CallLost: the request went out and no answer came (the server died, the connection closed, the
  call timed out): the outcome is unknown.
"""

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import httpx2
import mcp.types as types
import pydantic
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ClientMessageMetadata
from mcp_types.version import is_version_at_least

from agui_project import destinations

log = logging.getLogger(__name__)
MAX_PAGES = 50  # of one tools/list
RELIST_PAUSE = 1.0  # seconds between two tools/list set off by a stream of list_changed notifications


class Unreachable(Exception):
    """The server could not be reached; nothing was sent to it."""


class Refused(Exception):
    """The server answered with a protocol error: the call did not run."""


class CallLost(Exception):
    """The call was sent and no answer came back: whether it took effect is unknown."""


class DestinationRefused(Exception):
    """An HTTP server's address is internal and not among the allowed networks: nothing was sent."""


class SessionLost(CallLost):
    """A parked call's server no longer knows its session (404: restarted, or the session expired)."""


@dataclass(frozen=True)
class Parked:
    """A call stopped at the server's question; `resume` is JSON (kept on the ToolCall)."""

    message: str
    schema: dict
    resume: dict  # session_id, initialize (the InitializeResult), token (the first event id), elicitation_id


@dataclass(frozen=True)
class Endpoint:
    """How to reach one server (from its MCPServer row). env and headers hold secrets: repr leaves them out."""

    name: str
    transport: str  # "stdio" | "http"
    command: str = ""
    args: tuple = ()
    env: tuple = field(default=(), repr=False)  # ((name, value), ...)
    cwd: str = ""
    url: str = ""
    headers: tuple = field(default=(), repr=False)
    # the internal networks an HTTP server may be in (AGUI_MCP_ALLOWED_NETWORKS; agui_project.destinations)
    allowed_networks: tuple = ()

    @property
    def key(self):
        """Changes with any setting, so a changed server gets new sessions."""
        return hashlib.sha256(json.dumps([self.name, self.transport, self.command, list(self.args),
                                          list(self.env), self.cwd, self.url, list(self.headers)]).encode()).hexdigest()


def tool_dict(tool):
    """A listed tool as its MCP wire form (camelCase: inputSchema, annotations.readOnlyHint)."""
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


def result_text(result):
    """A CallToolResult as the text the model reads: its text blocks, else its structured content."""
    parts = []
    for block in result.content or []:
        if getattr(block, "type", "") == "text":
            parts.append(block.text)
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} omitted]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


@dataclass
class _Session:
    endpoint: Endpoint
    session: ClientSession | None = None
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    dead: bool = False
    elicit: Callable | None = None  # the current call's handler of elicitation/create (sync; run in a thread)
    task: asyncio.Task | None = None
    # Streamable HTTP: parking the current call at a question, and resuming a parked one
    may_park: bool = False  # the current call may be parked (its caller can pause the run)
    parked: asyncio.Future | None = None  # set to Parked by the elicitation callback
    tokens: list = field(default_factory=list)  # the current call's SSE event ids, in order
    session_id: str = ""  # the server's Mcp-Session-Id
    initialized: dict | None = None  # the InitializeResult, as JSON
    cut: bool = False  # parked: nothing more goes to the server from this session
    resume: dict | None = None  # a Parked.resume this session continues
    answer: tuple | None = None  # (action, content) for the parked question when it is replayed
    lost: bool = False  # the server answered 404 to the resumed session's id
    relisting: asyncio.Task | None = None  # the tools/list a list_changed set off, while it runs
    relist_again: bool = False  # another list_changed came meanwhile: list once more after it

    def resumable(self):
        """The server can be left and come back to: a session id, and this request's stream has event
        ids starting with a priming event (servers send one from protocol 2025-11-25 on, when they
        keep events), so replaying after the first id gives the question again."""
        version = (self.initialized or {}).get("protocolVersion", "")
        return (self.endpoint.transport == "http" and bool(self.session_id) and bool(self.tokens)
                and is_version_at_least(version, "2025-11-25"))


class Hub:
    """This process's MCP sessions. Thread-safe; every method blocks its caller until the answer."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pid = None
        self._loop = None
        self._idle = {}  # endpoint key -> [_Session]
        self.on_tools_changed = None  # (server name, [tool dicts]) -> None, after list_changed

    # --- the loop thread --------------------------------------------------------------------

    def _ensure_loop(self):
        with self._lock:
            if self._pid != os.getpid() or self._loop is None or not self._loop.is_running():
                loop = asyncio.new_event_loop()
                started = threading.Event()

                def serve():
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    loop.run_forever()

                threading.Thread(target=serve, name="mcp-client", daemon=True).start()
                started.wait()
                self._loop, self._pid, self._idle = loop, os.getpid(), {}
            return self._loop

    def _run(self, coro, timeout):
        future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    # --- sessions ---------------------------------------------------------------------------

    async def _serve(self, s, ready, connect_timeout):
        """Own one session from open to close (the SDK's context managers live in one task)."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(_transport(s))
                s.session = await stack.enter_async_context(ClientSession(
                    streams[0], _Gate(streams[1], s), elicitation_callback=self._elicitation(s),
                    message_handler=self._messages(s)))
                if s.resume:  # the session exists on the server: what it negotiated then holds
                    s.session.adopt(types.InitializeResult.model_validate(s.resume["initialize"]))
                else:
                    with anyio.fail_after(connect_timeout):
                        result = await s.session.initialize()
                    s.initialized = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                ready.set_result(s)
                await s.closing.wait()
        except BaseException as exc:  # noqa: BLE001 -- whatever stopped it, the session is gone
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):  # _open gave up waiting: nobody reads it
                    ready.cancel()
                else:
                    ready.set_exception(Unreachable(_describe(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("MCP server %s: session ended: %s", s.endpoint.name, _describe(exc))
        finally:
            s.dead = True

    async def _open(self, endpoint, connect_timeout, **fields):
        s = _Session(endpoint, **fields)
        ready = asyncio.get_running_loop().create_future()
        s.task = asyncio.create_task(self._serve(s, ready, connect_timeout))
        try:  # a server that never answers (or hangs starting) is given up on, and its task stopped
            return await asyncio.wait_for(asyncio.shield(ready), connect_timeout + 1)
        except TimeoutError as exc:
            s.task.cancel()
            raise Unreachable(f"no answer to initialize within {connect_timeout:g} s") from exc

    async def _checkout(self, endpoint, connect_timeout):
        pool = self._idle.setdefault(endpoint.key, [])
        while pool:
            s = pool.pop()
            if not s.dead:
                return s
        return await self._open(endpoint, connect_timeout)

    def _checkin(self, s):
        s.elicit, s.may_park, s.parked = None, False, None
        if s.dead or s.cut or s.resume:
            return
        self._idle.setdefault(s.endpoint.key, []).append(s)

    async def _close(self, s):
        s.dead = True
        s.closing.set()
        if s.task:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(s.task, 5)

    def _elicitation(self, s):
        async def elicit(context, params):
            handler = s.elicit
            schema = getattr(params, "requested_schema", None)
            if s.resume and str(context.request_id) == str(s.resume["elicitation_id"]):
                # the parked question, replayed by the server: the person's answer is its response
                action, content = s.answer or ("cancel", None)
                return types.ElicitResult(action=action, content=content if action == "accept" else None)
            if handler is None or schema is None:  # no call to ask for, or a URL-mode request
                return types.ElicitResult(action="decline")
            if s.may_park and s.parked is not None and not s.parked.done() and s.resumable():
                s.parked.set_result(Parked(params.message, schema, {
                    "session_id": s.session_id, "initialize": s.initialized, "token": s.tokens[0],
                    "elicitation_id": context.request_id}))
                # left unanswered: the resumed session answers it when the server replays it
                await asyncio.Event().wait()
            action, content = await asyncio.to_thread(handler, params.message, schema)
            return types.ElicitResult(action=action, content=content if action == "accept" else None)

        return elicit

    def _messages(self, s):
        async def handle(message):
            if isinstance(message, types.ToolListChangedNotification):
                # one tools/list at a time per session: a server that sent hundreds of these had as many
                # lists asked at once, each a database write and every process's catalog rebuilt
                if s.relisting is None or s.relisting.done():
                    s.relisting = asyncio.get_running_loop().create_task(self._relist(s))
                else:
                    s.relist_again = True
            elif isinstance(message, Exception):
                log.warning("MCP server %s: %s", s.endpoint.name, _describe(message))

        return handle

    async def _relist(self, s):
        """tools/list after list_changed, once more if others came meanwhile (then after a pause)."""
        while True:
            s.relist_again = False
            try:
                tools = await _all_tools(s.session)
            except Exception as exc:  # noqa: BLE001 -- the next refresh tries again
                log.warning("MCP server %s: tools/list after list_changed failed: %s", s.endpoint.name,
                            _describe(exc))
                return
            if self.on_tools_changed:
                await asyncio.to_thread(self.on_tools_changed, s.endpoint.name, tools)
            if not s.relist_again or s.dead:
                return
            await asyncio.sleep(RELIST_PAUSE)

    # --- what callers use -------------------------------------------------------------------

    def list_tools(self, endpoint, timeout=10.0):
        """tools/list over a session of its own, closed after (a web process keeps no server running)."""
        async def go():
            s = await self._open(endpoint, timeout)
            try:
                with anyio.fail_after(timeout):
                    return await _all_tools(s.session)
            except TimeoutError as exc:
                raise Unreachable(f"no answer to tools/list within {timeout:g} s") from exc
            except MCPError as exc:
                raise Unreachable(f"tools/list failed: {exc.message}") from exc
            except Unreachable:
                raise
            except Exception as exc:  # an answer the SDK cannot read (its models refuse it): garbage, said
                raise Unreachable(f"tools/list answered with something that is not MCP ({_describe(exc)})") from exc
            finally:
                await self._close(s)

        return self._run(go(), timeout * 2 + 5)

    def call(self, endpoint, name, arguments, timeout=60.0, connect_timeout=10.0, elicit=None, park=False):
        """tools/call on a pooled session; returns the CallToolResult (is_error included), or Parked.

        elicit(message, requested_schema) -> (action, content): how the person answers the
        server's questions during this call (runs in a thread of its own; may block).
        park: the caller can pause instead: a question from a server that supports resumption
        ends the call here with Parked (then `resume` takes it up, from any process)."""
        async def go():
            s = await self._checkout(endpoint, connect_timeout)
            s.elicit, s.may_park = elicit, park
            s.parked = asyncio.get_running_loop().create_future()
            sent = asyncio.ensure_future(self._send(s, name, arguments, timeout))
            try:
                await asyncio.wait({sent, s.parked}, return_when=asyncio.FIRST_COMPLETED)
                if not sent.done():  # parked: let the session go without ending it on the server
                    s.cut = True
                    sent.cancel()
                    with contextlib.suppress(BaseException):
                        await sent
                    await self._close(s)
                    return s.parked.result()
                return await self._answered(s, sent, timeout)
            finally:
                self._checkin(s)

        # the SDK times the call out itself (read_timeout_seconds); this wait only backs it up
        try:
            return self._run(go(), connect_timeout + timeout + 10)
        except TimeoutError as exc:
            raise CallLost(f"no answer within {timeout:g} s") from exc

    def resume(self, endpoint, name, arguments, state, answer, timeout=60.0, connect_timeout=10.0):
        """Take up a parked call (Parked.resume `state`) and give the server the person's answer
        (action, content); returns the CallToolResult. SessionLost when the server no longer knows
        the session; CallLost when it could not be reached or did not answer."""
        async def go():
            try:
                s = await self._open(endpoint, connect_timeout, resume=state, answer=answer)
            except Unreachable as exc:  # the question is waiting on the server: what it does now is unknown
                raise CallLost(f"the server could not be reached to take the person's answer ({exc})") from exc
            try:
                sent = asyncio.ensure_future(self._send(s, name, arguments, timeout, token=state["token"]))
                return await self._answered(s, sent, timeout)
            finally:
                await self._close(s)

        try:
            return self._run(go(), connect_timeout + timeout + 10)
        except TimeoutError as exc:
            raise CallLost(f"no answer within {timeout:g} s") from exc

    async def _send(self, s, name, arguments, timeout, token=None):
        """tools/call through ClientSession.send_request rather than call_tool: only send_request takes
        the Streamable HTTP metadata (the request's event ids as they come, or the id to resume after)."""
        s.tokens = []
        metadata = None
        if s.endpoint.transport == "http":
            async def seen(event_id):
                s.tokens.append(event_id)

            metadata = ClientMessageMetadata(resumption_token=token, on_resumption_token_update=seen)
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        result = await s.session.send_request(request, types.CallToolResult, request_read_timeout_seconds=timeout,
                                              metadata=metadata)
        if not result.is_error:
            await s.session.validate_tool_result(name, result)  # as call_tool does
        return result

    async def _answered(self, s, sent, timeout):
        """The result of the tools/call `sent`, its failures sorted (see the module's docstring)."""
        try:
            return await sent
        except MCPError as exc:
            if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                await self._close(s)
                if s.lost:
                    raise SessionLost("the server no longer knows the session the call was waiting in (it was "
                                      "restarted or let the session expire)") from exc
                raise CallLost(_lost_text(exc, timeout)) from exc
            raise Refused(exc.message) from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            await self._close(s)
            raise CallLost(f"the connection to the server broke ({_describe(exc)})") from exc
        except pydantic.ValidationError as exc:  # it answered, in words the SDK cannot read: whether it acted is unknown
            await self._close(s)
            raise CallLost(f"the server's answer is not MCP ({_describe(exc)})") from exc

    def close_all(self):
        """Close every pooled session (tests, and a server's settings changing)."""
        if self._loop is None or self._pid != os.getpid():
            return

        async def go():
            for pool in list(self._idle.values()):
                while pool:
                    await self._close(pool.pop())

        self._run(go(), 30)


async def _all_tools(session):
    """Every page of tools/list; Unreachable past MAX_PAGES or a cursor that comes back (a server
    whose pages never end was read until the timeout, and after a list_changed, for ever)."""
    tools, cursor, seen = [], None, set()
    for _ in range(MAX_PAGES):
        result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += [tool_dict(t) for t in result.tools]
        cursor = result.next_cursor
        if not cursor:
            return tools
        if cursor in seen:
            raise Unreachable(f"tools/list pages go round in a circle (the cursor {cursor[:100]!r} came back)")
        seen.add(cursor)
    raise Unreachable(f"tools/list goes on for more than {MAX_PAGES} pages")


def _transport(s):
    endpoint = s.endpoint
    if endpoint.transport == "http":
        headers = dict(endpoint.headers)
        if s.resume:  # the SDK's transport takes its session id from initialize only; the client's headers carry it
            headers["mcp-session-id"] = s.resume["session_id"]

        async def sending(request):
            if s.cut and request.method == "DELETE":
                raise _Kept()
            # every request, the resumed stream's too: the guard sees what the name resolves to now
            problem = await destinations.refused_async(str(request.url), endpoint.allowed_networks,
                                                       "AGUI_MCP_ALLOWED_NETWORKS")
            if problem:
                raise DestinationRefused(problem)

        async def seen(response):
            if not s.resume and response.headers.get("mcp-session-id"):
                s.session_id = response.headers["mcp-session-id"]
            if s.resume and response.status_code == 404:  # the SDK reports it as a closed connection
                s.lost = True

        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0),
                                    event_hooks={"request": [sending], "response": [seen]})
        return _owning(client, streamable_http_client(endpoint.url, http_client=client))
    params = StdioServerParameters(command=endpoint.command, args=list(endpoint.args), env=dict(endpoint.env) or None,
                                   cwd=endpoint.cwd or None)
    # the real stderr: under Celery sys.stderr is a logging proxy without a file descriptor
    return stdio_client(params, errlog=sys.__stderr__)


class _Gate:
    """The session's write stream, shut once the call is parked. When a ClientSession shuts down it
    answers the server's unanswered requests with CONNECTION_CLOSED (mcp/shared/jsonrpc_dispatcher.py,
    _handle_request, written so that "teardown writes still land"); whether that POST leaves before
    the transport is torn down is a race, and a parked question must stay unanswered for the resumed
    session to answer it. The one place this code stands between ClientSession and the SDK's
    transport: the SDK has no way to leave a session without a word."""

    def __init__(self, stream, s):
        self._stream, self._s = stream, s

    async def send(self, item):
        if not self._s.cut:
            await self._stream.send(item)

    def __getattr__(self, name):
        return getattr(self._stream, name)

    async def __aenter__(self):
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._stream.__aexit__(*exc)


class _Kept(Exception):
    """Raised by the HTTP client's request hook for the DELETE that would end a parked call's session
    (streamable_http_client's terminate_on_close, fixed when the session opened): the server keeps
    the session for the resumed call. The SDK logs it as a failed termination, with this text."""

    def __init__(self):
        super().__init__("not ended: the session is kept for a call waiting for the person's answer")


@contextlib.asynccontextmanager
async def _owning(client, transport):
    async with client, transport as streams:
        yield streams


def _describe(exc):
    """An exception in a sentence, with the first of an exception group's causes."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    text = str(exc) or type(exc).__name__
    return text[:500]


def _lost_text(exc, timeout):
    if exc.code == types.REQUEST_TIMEOUT:
        return f"no answer within {timeout:g} s"
    return "the server stopped during the call"


hub = Hub()
