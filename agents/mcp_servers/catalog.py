"""This process's view of the MCP tools: rebuilt from the MCPServer rows whenever one changed.

Every process (web, worker) keeps its own: the rows' `revision`s are compared with the ones this
process built from, after a change token in Redis says something changed (or at once when forced:
a change made here). The tools' code defaults are registered with approvals' registry
like an @tool's, and that registry asks `sync` before it answers (approvals knows nothing of MCP:
it only has a refresh hook).
"""

import logging
import threading
import time
import uuid

import jsonschema
import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from agents import registry as agents_registry
from approvals import registry

from . import client
from .models import MCPServer
from .tools import SEPARATOR, MCPTool, tool_name

log = logging.getLogger(__name__)
SYNC_SECONDS = 2.0  # how often the database is read while Redis cannot tell of changes
TOKEN_KEY = "agui:mcp:servers"
DOWN = object()

_lock = threading.RLock()
_seen = None  # {server pk: revision} this process built from
_checked = 0.0
_by_name = {}  # tool name -> MCPTool, every server's (paused calls still resolve while a server is down)
_offered = {}  # agent name -> [MCPTool] of its healthy, enabled servers
_skipped = {}  # server name -> [sentences]: listed tools that could not be offered
_users = {}  # server name -> the agents that use it
on_unreachable = None  # (server, error): set by the app's ready() to services.mark_unhealthy
_token = None  # the change token this process built from
_redis = None


def endpoint_of(server):
    return client.Endpoint(
        name=server.name, transport=server.transport, command=server.command,
        args=tuple(str(a) for a in server.args or []),
        env=tuple(sorted((str(k), str(v)) for k, v in (server.env or {}).items())), cwd=server.cwd,
        url=server.url, headers=tuple(sorted((str(k), str(v)) for k, v in (server.headers or {}).items())),
        allowed_networks=tuple(settings.AGUI_MCP_ALLOWED_NETWORKS),
    )


def build(server):
    """The MCPTools of one row, and sentences about the listed tools that could not be offered."""
    endpoint, tools, problems, names = endpoint_of(server), [], [], set()
    for listed in server.tools or []:
        remote = listed.get("name") if isinstance(listed, dict) else None
        name = tool_name(server.name, remote) if isinstance(remote, str) and remote else None
        if name is None or name in names:
            problems.append(f"{remote!r}: its name cannot be offered to the model (too long or a duplicate)")
            continue
        try:
            tools.append(MCPTool(server.name, endpoint, listed, name, on_unreachable=_unreachable))
        except (jsonschema.SchemaError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"{remote}: its inputSchema is not a JSON Schema ({str(exc)[:200]})")
            continue
        names.add(name)
    return tools, problems


def _unreachable(server, error):
    if on_unreachable:
        on_unreachable(server, error)


def _changes():
    """Redis keeps a token every change of a server replaces (services.announce): comparing it costs
    no database query, so the hot paths (a policy lookup per call) read the database only after a
    change. A client of its own: no retries, a short timeout (Redis down: the database, throttled)."""
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5,
                                      retry=Retry(NoBackoff(), 0))
    try:
        return _redis.get(TOKEN_KEY)
    except redis.RedisError:
        return DOWN


def announce():
    """After a server changed (on commit): every process rebuilds its tools on its next lookup."""
    try:
        _changes()  # makes the client
        _redis.set(TOKEN_KEY, uuid.uuid4().hex)
    except redis.RedisError as exc:  # the processes fall back to reading the database every SYNC_SECONDS
        log.warning("MCP servers' change not announced (%s)", exc)


def sync(force=False):
    """Rebuild this process's MCP tools when a server row changed since the last build."""
    global _seen, _checked, _token
    token = _changes()
    if not force and token is not DOWN and token == _token and _seen is not None:
        return
    now = time.monotonic()
    if not force and token is DOWN and now - _checked < SYNC_SECONDS:
        return
    with _lock:
        try:
            current = dict(MCPServer.objects.values_list("pk", "revision"))
        except Exception as exc:  # noqa: BLE001 -- no table yet (migrating), no database, an async caller
            log.debug("MCP servers not read: %s", exc)
            return
        _checked, _token = now, token
        if current == _seen:
            return
        _rebuild(list(MCPServer.objects.all()))
        _seen = current


def reset():
    """Forget every MCP tool (tests: rows rolled back under this process)."""
    global _seen, _token
    with _lock:
        _rebuild([])
        _seen, _token = None, None


MAX_TOOLS = 128  # the model's API (OpenAI's) refuses a request offering more: every run would fail


def _room(agent_name):
    """How many MCP tools the agent may be offered: the setting's, less what its own tools leave."""
    agent = agents_registry.get_agent(agent_name)
    own = len(getattr(agent, "tools", None) or [])
    return max(min(settings.AGUI_MCP_MAX_TOOLS_PER_AGENT, MAX_TOOLS - own), 0)


def _rebuild(servers):
    global _by_name, _offered, _skipped, _users
    by_name, offered, skipped, users = {}, {}, {}, {}
    for server in servers:
        if not server.enabled:
            continue
        users[server.name] = set(server.agents or [])
        tools, skipped[server.name] = build(server)
        for t in tools:
            by_name[t.name] = t
            if server.healthy:
                for agent in server.agents or []:
                    mine = offered.setdefault(agent, [])
                    if len(mine) < _room(agent):
                        mine.append(t)
                    else:  # the model API's own limit on tools: the rest said, not offered
                        skipped[server.name].append(
                            f"{t.remote_name}: not offered to {agent}, which is offered {len(mine)} MCP tools already "
                            f"(AGUI_MCP_MAX_TOOLS_PER_AGENT, and at most {MAX_TOOLS} tools in all with its own)")
    for name in set(_by_name) - set(by_name):
        registry.unregister(name)
    for t in list(by_name.values()):
        try:
            registry.register(t.defaults())
        except registry.InvalidDefaults as exc:  # its annotations cannot be a policy: said, not offered
            log.warning("MCP tool %s not registered: %s", t.name, exc)
            skipped.setdefault(t.server, []).append(f"{t.remote_name}: {exc}")
            by_name.pop(t.name)
            for tools in offered.values():
                if t in tools:
                    tools.remove(t)
    # new dicts swapped in whole: a reader in another thread sees the old set or the new one
    _by_name, _offered, _skipped, _users = by_name, offered, skipped, users


def tools_for(agent_name):
    """The MCP tools offered to this agent's model (its healthy servers')."""
    sync()
    return list(_offered.get(agent_name, ()))


def tool_for(agent_name, name):
    """The MCP tool of that name when one of this agent's servers lists it (healthy or not)."""
    if not (isinstance(name, str) and SEPARATOR in name):  # not an MCP tool's name: no query
        return None
    sync()
    found = _by_name.get(name)
    return found if found is not None and agent_name in _users.get(found.server, ()) else None


def get(name):
    sync()
    return _by_name.get(name)


def skipped(server_name):
    return list(_skipped.get(server_name, ()))


registry.add_source(sync)
