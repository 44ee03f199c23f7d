"""The client side of MCP, on the official `mcp` SDK: one asyncio loop per process, long-lived sessions.

Workers are synchronous (Celery) and the SDK is asyncio. A session per call would start the
server again for every call (a Python or Node process: 0.3-1 s each) and could not hear
`notifications/tools/list_changed` between calls; so each process keeps one daemon thread
running an event loop (started on first use, again after a fork: prefork children each get
their own), and in it a small pool of open sessions per server. A synchronous caller hands a
coroutine to that loop and waits for its answer (`run_coroutine_threadsafe`): the hop costs
tens of microseconds. One session carries one call at a time, so a server's `elicitation/create`
belongs to the call that session is making; a second concurrent call opens a second session.

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
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

log = logging.getLogger(__name__)


class Unreachable(Exception):
    """The server could not be reached; nothing was sent to it."""


class Refused(Exception):
    """The server answered with a protocol error: the call did not run."""


class CallLost(Exception):
    """The call was sent and no answer came back: whether it took effect is unknown."""


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
                streams = await stack.enter_async_context(_transport(s.endpoint))
                s.session = await stack.enter_async_context(ClientSession(
                    *streams[:2], elicitation_callback=self._elicitation(s), message_handler=self._messages(s)))
                with anyio.fail_after(connect_timeout):
                    await s.session.initialize()
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

    async def _open(self, endpoint, connect_timeout):
        s = _Session(endpoint)
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
        s.elicit = None
        if s.dead:
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
            if handler is None or schema is None:  # no call to ask for, or a URL-mode request
                return types.ElicitResult(action="decline")
            action, content = await asyncio.to_thread(handler, params.message, schema)
            return types.ElicitResult(action=action, content=content if action == "accept" else None)

        return elicit

    def _messages(self, s):
        async def handle(message):
            if isinstance(message, types.ToolListChangedNotification):
                asyncio.get_running_loop().create_task(self._relist(s))
            elif isinstance(message, Exception):
                log.warning("MCP server %s: %s", s.endpoint.name, _describe(message))

        return handle

    async def _relist(self, s):
        try:
            tools = await _all_tools(s.session)
        except Exception as exc:  # noqa: BLE001 -- the next refresh tries again
            log.warning("MCP server %s: tools/list after list_changed failed: %s", s.endpoint.name, _describe(exc))
            return
        if self.on_tools_changed:
            await asyncio.to_thread(self.on_tools_changed, s.endpoint.name, tools)

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
            finally:
                await self._close(s)

        return self._run(go(), timeout * 2 + 5)

    def call(self, endpoint, name, arguments, timeout=60.0, connect_timeout=10.0, elicit=None):
        """tools/call on a pooled session; returns the CallToolResult (is_error included).

        elicit(message, requested_schema) -> (action, content): how the person answers the
        server's questions during this call (runs in a thread of its own; may block)."""
        async def go():
            s = await self._checkout(endpoint, connect_timeout)
            s.elicit = elicit
            try:
                return await s.session.call_tool(name, arguments, read_timeout_seconds=timeout)
            except MCPError as exc:
                if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                    await self._close(s)
                    raise CallLost(_lost_text(exc, timeout)) from exc
                raise Refused(exc.message) from exc
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
                await self._close(s)
                raise CallLost(f"the connection to the server broke ({_describe(exc)})") from exc
            finally:
                self._checkin(s)

        # the SDK times the call out itself (read_timeout_seconds); this wait only backs it up
        try:
            return self._run(go(), connect_timeout + timeout + 10)
        except TimeoutError as exc:
            raise CallLost(f"no answer within {timeout:g} s") from exc

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
    tools, cursor = [], None
    while True:
        result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += [tool_dict(t) for t in result.tools]
        cursor = result.next_cursor
        if not cursor:
            return tools


def _transport(endpoint):
    if endpoint.transport == "http":
        client = httpx2.AsyncClient(headers=dict(endpoint.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        return _owning(client, streamable_http_client(endpoint.url, http_client=client))
    params = StdioServerParameters(command=endpoint.command, args=list(endpoint.args), env=dict(endpoint.env) or None,
                                   cwd=endpoint.cwd or None)
    # the real stderr: under Celery sys.stderr is a logging proxy without a file descriptor
    return stdio_client(params, errlog=sys.__stderr__)


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
