"""Every change of an MCPServer row: saved by an admin, refreshed (tools/list), marked (un)healthy.

Each change bumps the row's `revision`, which every process's catalog compares to rebuild its
tools; this process rebuilds at once.
"""

import logging
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import close_old_connections, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy

from agui_project import jsoncheck

from . import catalog, client
from .models import MCPServer

log = logging.getLogger(__name__)
FIELDS = ("transport", "command", "args", "env", "cwd", "url", "headers", "agents", "enabled")


def origin(url):
    """(scheme, host, port) of a URL: where its headers go."""
    try:
        parts = urlsplit(url or "")
        return parts.scheme, parts.hostname, parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return url, None, None


def moves_secrets(row, values):
    """The change sends the stored headers to another origin: they are write-only (nobody can read
    them back), so a URL that moves elsewhere keeping them would hand them to whoever is there."""
    return (row is not None and bool(row.headers) and "headers" not in values and "url" in values
            and origin(values["url"]) != origin(row.url))


HEADERS_MOVE = gettext_lazy("The URL moves to another origin (scheme, host or port): send the headers again for "
                            "it, or an empty object to send none. The stored ones are not sent elsewhere.")


def save_server(name, values, *, refresh=True):
    """Create or change a server (values: FIELDS; env/headers left out keep their secrets, as long as
    the URL stays on its origin), then ask it for its tools. Returns the row as it stands after the refresh."""
    with transaction.atomic():
        row = MCPServer.objects.select_for_update().filter(name=name).first() or MCPServer(name=name)
        if moves_secrets(row if row.pk else None, values):
            raise ValidationError({"headers": [str(HEADERS_MOVE)]})
        for field in FIELDS:
            if field in values:
                setattr(row, field, values[field])
        row.revision += 1
        row.full_clean()
        row.save()
        transaction.on_commit(catalog.announce)
    catalog.sync(force=True)
    if refresh and row.enabled:
        return refresh_tools(name)
    return row


def delete_server(name):
    deleted, _ = MCPServer.objects.filter(name=name).delete()
    transaction.on_commit(catalog.announce)
    catalog.sync(force=True)
    return bool(deleted)


def refresh_tools(name, by_admin=True):
    """tools/list now (an admin's save or refresh; the beat's check of a server never asked or
    unhealthy, `by_admin=False`): healthy with its tools, or unhealthy with the error."""
    row = MCPServer.objects.get(name=name)
    try:
        tools = client.hub.list_tools(catalog.endpoint_of(row), timeout=float(settings.AGUI_MCP_CONNECT_TIMEOUT))
    except client.Unreachable as exc:
        mark_unhealthy(name, str(exc))
    else:
        _store_tools(name, tools, by_admin=by_admin)
    return MCPServer.objects.get(name=name)


def tools_changed(name, tools):
    """notifications/tools/list_changed, heard on a worker's session: the new list (in the client's thread)."""
    try:
        _store_tools(name, tools, by_admin=False)
    finally:
        close_old_connections()


# the annotations that make a tool's defaults laxer when they change this way (tools.MCPTool): from
# what the hint was (None: left out, MCP's default) to what it says now
LOOSER = {
    "readOnlyHint": lambda was, now: now is True and was is not True,  # never asks
    "destructiveHint": lambda was, now: now is False and was is not False,  # runs without the reviewers
    "idempotentHint": lambda was, now: now is True and was is not True,  # run again after a lost worker
    "openWorldHint": lambda was, now: now is False and was is not False,  # the reviewer no longer told
}


def held_back(before, tools):
    """`tools` with the hints that loosen a tool listed before kept as they were: a server cannot
    make its own tool run without approval by listing it again (a readOnlyHint the admin never saw).
    Returns (the tools as kept, [(tool name, [hints held back])]). An admin's save or refresh takes
    the listing as it is; a tool not listed before is taken as listed."""
    earlier = {t["name"]: t.get("annotations") or {} for t in before or [] if isinstance(t, dict) and "name" in t}
    kept, held = [], []
    for tool in tools:
        was = earlier.get(tool.get("name")) if isinstance(tool, dict) else None
        if was is None:
            kept.append(tool)
            continue
        hints = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
        looser = [h for h, loosens in LOOSER.items() if loosens(was.get(h), hints.get(h))]
        if looser:
            hints = {**{h: v for h, v in hints.items() if h not in looser}, **{h: was[h] for h in looser if h in was}}
            tool = {**tool, "annotations": hints}
            held.append((tool["name"], looser))
        kept.append(tool)
    return kept, held


def _store_tools(name, tools, by_admin):
    # a listing holding text no database stores (a NUL, a lone surrogate: PostgreSQL's jsonb refuses
    # them) failed the save with it: a 500 on POST /api/mcp-servers/, a beat check that stopped there
    refusal = jsoncheck.problem(tools, prefix="tools")
    if refusal is not None:
        return mark_unhealthy(name, f"its tools/list cannot be stored: {refusal.message}")
    held = []
    if not by_admin:
        before = MCPServer.objects.filter(name=name).values_list("tools", flat=True).first()
        tools, held = held_back(before, tools)
    MCPServer.objects.filter(name=name).update(tools=tools, healthy=True, error="", checked_at=timezone.now(),
                                               revision=F("revision") + 1)
    transaction.on_commit(catalog.announce)
    catalog.sync(force=True)
    problems = catalog.skipped(name)
    if held:
        log.warning("MCP server %s listed laxer hints for tools it listed before; kept the earlier ones: %s",
                    name, held)
        problems = [*problems, *(f"{tool}: the server now says {', '.join(hints)}; the earlier hints are kept until "
                                 "an admin refreshes the server" for tool, hints in held)]
    if problems:  # the server answers, but some of its tools cannot be offered: said, not hidden
        MCPServer.objects.filter(name=name).update(error="; ".join(problems)[:5000])
    log.info("MCP server %s lists %d tool(s)", name, len(tools))


RECHECK_SECONDS = 30  # how often an unhealthy server is asked again


def check_due():
    """The servers the beat asks again: enabled, and never asked or unhealthy for RECHECK_SECONDS."""
    cutoff = timezone.now() - timedelta(seconds=RECHECK_SECONDS)
    due = MCPServer.objects.filter(enabled=True).filter(
        Q(checked_at__isnull=True) | Q(healthy=False, checked_at__lt=cutoff)).values_list("name", flat=True)
    return {name: refresh_tools(name, by_admin=False).healthy for name in list(due)}


def mark_unhealthy(name, error):
    """The server could not be reached or answered garbage: its tools are not offered until it answers."""
    error = jsoncheck.scrub(error[:5000])  # the server's own words may hold a NUL, which no row of PostgreSQL stores
    changed = (MCPServer.objects.filter(name=name).exclude(healthy=False, error=error)
               .update(healthy=False, error=error, checked_at=timezone.now(), revision=F("revision") + 1))
    if changed:
        log.warning("MCP server %s is unhealthy: %s", name, error)
        transaction.on_commit(catalog.announce)
        catalog.sync(force=True)
