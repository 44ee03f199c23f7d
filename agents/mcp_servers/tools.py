"""A tool an MCP server lists, as our runner knows tools (the interface of agents.runtime.tools.Tool).

- name: `<server>__<tool>` always (as MCP hosts commonly do), so a name never changes when
  another server with a tool of the same name is added (a policy saved for one tool would
  otherwise silently apply to another) and the server is visible in every list;
- schema: the tool's `inputSchema`; arguments are validated against it (jsonschema) before policy;
- policy defaults from the MCP annotations: readOnlyHint -> never ask, low risk;
  destructiveHint (MCP's default for a tool that is not read-only) -> always ask the reviewers,
  high risk, not reversible; a write declared not destructive -> runs, medium risk;
  idempotentHint -> may be run again after a lost worker or a timed-out call;
  openWorldHint (MCP's default: true) -> told to the reviewer in the call's impact.
"""

import json
import logging
import re

import jsonschema
from django.conf import settings
from django.utils.translation import gettext as _

from agents.runtime.tools import OutcomeUnknown, ToolError, said_in_every_language
from agui_project import json_schema
from approvals import argument_errors, registry, schemas

from . import client, elicitation

log = logging.getLogger(__name__)
SEPARATOR = "__"
MAX_NAME = 64  # OpenAI's limit for a function's name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
REVIEWERS = "group:reviewers"


def tool_name(server, remote):
    """Our name of a server's tool, or None when it cannot be one (too long)."""
    name = f"{server}{SEPARATOR}{_UNSAFE.sub('_', remote)}"
    return name if len(name) <= MAX_NAME else None


def _object_schema(schema):
    """The inputSchema as the model and the engine get it: an object, without presentation titles."""
    schema = dict(schema) if isinstance(schema, dict) else {}
    schema.setdefault("type", "object")
    schema.pop("title", None)
    schema["properties"] = {k: {f: v for f, v in p.items() if f != "title"} if isinstance(p, dict) else p
                            for k, p in (schema.get("properties") or {}).items()}
    return schema


def _bounded(text):
    """A server's answer as the model reads it: at most AGUI_MCP_RESULT_MAX_CHARS, the cut said (it is
    kept in the thread and sent to the model on every later turn)."""
    limit = settings.AGUI_MCP_RESULT_MAX_CHARS
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters of the server's answer not shown]"


class MCPTool:
    """One listed tool of one server; `endpoint` is how to reach it (client.Endpoint)."""

    def __init__(self, server, endpoint, listed, name, on_unreachable=None):
        self.server = server
        self.on_unreachable = on_unreachable  # (server, error): the catalog marks the server unhealthy
        self.endpoint = endpoint
        self.remote_name = listed["name"]
        self.name = name
        hints = listed.get("annotations") or {}
        self.title = listed.get("title") or hints.get("title") or self.remote_name
        self.description = (listed.get("description") or self.title).strip()
        self.schema = _object_schema(listed.get("inputSchema"))
        # SchemaError: not offered; its patterns on RE2 (a server's pattern cannot hold a worker or a reviewer's
        # page); bounded like an outside agent's schema, since it goes to the model with every request
        self._validator = json_schema.validator(self.schema, max_bytes=schemas.MAX_SCHEMA_BYTES)
        self.read_only = hints.get("readOnlyHint") is True
        # MCP: destructiveHint defaults to true, and means something only when the tool is not read-only
        self.destructive = not self.read_only and hints.get("destructiveHint", True) is not False
        self.idempotent = self.read_only or hints.get("idempotentHint") is True
        self.open_world = hints.get("openWorldHint", True) is not False
        if self.read_only:
            self.approval_mode, self.approver, self.risk, self.reversible = "never", "requester", "low", True
        elif self.destructive:
            self.approval_mode, self.approver, self.risk, self.reversible = "always", REVIEWERS, "high", False
        else:
            self.approval_mode, self.approver, self.risk, self.reversible = "never", "requester", "medium", False
        self.timeout_seconds = None
        self.objects = None
        self.in_database = False  # what it changes is the server's: its claim waits for the WAL's flush

    def __repr__(self):
        return f"<MCPTool {self.name}>"

    # --- what the runner asks of a tool ------------------------------------------------------

    def openai_spec(self):
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.schema}}

    def validate(self, arguments, requester=None):
        if not isinstance(arguments, dict):
            raise registry.ArgumentsInvalid({"__root__": ["arguments must be a JSON object"]})
        try:
            arguments = json.loads(json.dumps(arguments, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise registry.ArgumentsInvalid({"__root__": ["arguments must be plain JSON"]}) from exc
        if inexact := argument_errors.inexact(arguments):
            raise registry.ArgumentsInvalid(inexact)
        try:
            errors = argument_errors.from_jsonschema(self._validator, arguments)
        except jsonschema.SchemaError as exc:  # a $ref that cannot be followed: nothing is sent to the server
            raise registry.ArgumentsInvalid({"__root__": [_("the tool's inputSchema cannot be read: %(error)s") % {
                "error": exc.message}]}) from exc
        if errors:
            raise registry.ArgumentsInvalid(errors)
        # what the server will take for what is left out: policy and the reviewer read it, and it is sent
        try:
            return json_schema.with_defaults(self._validator, arguments)
        except json_schema.TooCostly as exc:  # a big default copied into each of many items
            raise registry.ArgumentsInvalid({"__root__": [_("the tool's inputSchema cannot be read: %(error)s") % {
                "error": exc.message}]}) from exc

    def authorize(self, user, arguments):
        return []  # an MCP server's objects are its own: the server is trusted with them, its policy decides

    def description_for(self, arguments):
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        return _("%(title)s on the MCP server %(server)s (%(arguments)s)") % {
            "title": self.title, "server": self.server, "arguments": shown or _("no arguments")}

    def impact_for(self, arguments):
        parts = [_("Runs %(tool)s on the MCP server %(server)s.") % {"tool": self.remote_name, "server": self.server}]
        if self.destructive:
            parts.append(_("The server says it may delete or overwrite data; it cannot be undone from here."))
        if self.open_world:
            parts.append(_("It may reach beyond this system (the server marks it open world)."))
        return " ".join(parts)

    def request_context(self):
        """Kept with the approval request: which server the call goes to."""
        return {"mcp": {"server": self.server, "tool": self.remote_name, "open_world": self.open_world,
                        "destructive": self.destructive, "read_only": self.read_only}}

    def run(self, ctx, arguments):
        asker = elicitation.asker(ctx, self)
        parked = elicitation.parked(ctx)  # (state, answer): a call that stopped at the server's question
        may_park = asker is not None  # in a run: it can pause at the server's question
        attempts = max(1, int(settings.AGUI_TOOL_MAX_ATTEMPTS) if self.idempotent else 1)
        timeouts = {"timeout": float(settings.AGUI_MCP_CALL_TIMEOUT),
                    "connect_timeout": float(settings.AGUI_MCP_CONNECT_TIMEOUT)}
        for attempt in range(1, attempts + 1):
            try:
                if parked:
                    result = client.hub.resume(self.endpoint, self.remote_name, arguments, *parked, **timeouts)
                else:
                    result = client.hub.call(self.endpoint, self.remote_name, arguments, elicit=asker,
                                             park=may_park, **timeouts)
                if isinstance(result, client.Parked):  # raises Paused: the run pauses, the worker goes
                    answer = elicitation.park(ctx, self, result)  # or it could not: the server hears decline
                    result = client.hub.resume(self.endpoint, self.remote_name, arguments, result.resume, answer,
                                               **timeouts)
            except client.Unreachable as exc:
                if self.on_unreachable:
                    self.on_unreachable(self.server, str(exc))
                raise ToolError(_("the MCP server %(server)s could not be reached (%(error)s), so nothing was "
                                  "executed") % {"server": self.server, "error": exc}) from exc
            except client.Refused as exc:
                raise ToolError(_("the MCP server %(server)s refused the call: %(error)s") % {
                    "server": self.server, "error": exc}) from exc
            except client.CallLost as exc:
                if attempt < attempts:  # idempotent: running it again cannot repeat an effect
                    log.warning("MCP %s: %s; running it again (idempotent, attempt %d)", self.name, exc, attempt + 1)
                    if parked:  # a new call: if the server asks again, the person's answer is given again
                        asker, parked, may_park = elicitation.asker(ctx, self, again=parked[1]), None, False
                    continue
                raise OutcomeUnknown(_("the MCP server %(server)s: %(error)s") % {
                    "server": self.server, "error": exc}) from exc
            text = _bounded(client.result_text(result))
            if result.is_error:
                raise ToolError(text or _("the MCP server %(server)s reported an error") % {"server": self.server})
            return text
        raise AssertionError("unreachable")  # the loop returns or raises

    def defaults(self):
        return registry.ToolDefaults(
            name=self.name, description=self.description, schema=self.schema, validate=self.validate,
            mode=self.approval_mode, approver=self.approver, risk=self.risk, idempotent=self.idempotent,
            reversible=self.reversible, describe=lambda arguments, requester=None: said_in_every_language(self, arguments),
            # the server's title for people, as it wrote it (no catalogue of ours has it); never its description
            summary=self.title if self.title != self.remote_name else "",
            extra={"source": "mcp", "server": self.server, "tool": self.remote_name,
                                               "open_world": self.open_world},
        )
