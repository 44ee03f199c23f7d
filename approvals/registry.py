"""Code defaults of every gated tool, registered at start-up by the apps that own the tools.

The engine uses them when no ToolPolicy row exists, and to validate a reviewer's edited
arguments without knowing anything about the tool's implementation.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from .validators import policy_errors


class ArgumentsInvalid(Exception):
    def __init__(self, errors):
        super().__init__("invalid arguments")
        self.errors = errors  # {field path: [messages]}


@dataclass(frozen=True)
class ToolDefaults:
    name: str
    description: str
    schema: dict
    # (arguments, requester=None) -> cleaned arguments, or ArgumentsInvalid; the requester is whom
    # the call acts for (what a name means can depend on it: a file in their own sandbox)
    validate: Callable[..., dict]
    mode: str = "never"
    approver: str = "requester"  # "requester" or "group:<name>"
    risk: str = "medium"
    timeout_seconds: int | None = None
    timeout_action: str = "reject"
    required_approvals: int = 1
    conditions: list = field(default_factory=list)  # approvals/rules.py
    idempotent: bool = False  # safe to re-run after a crash mid-execution
    reversible: bool = False
    reminder_fraction: float | None = 0.5
    escalation: str = ""  # "group:<name>": told (and may decide) at escalation_fraction of the timeout
    escalation_fraction: float | None = None
    extra: dict = field(default_factory=dict)
    # what reviewers may answer (approvals.choices.DECISIONS)
    allowed_decisions: tuple = ("approve", "edit", "reject")
    # (arguments, requester) -> [{"object", "owner"}] for the inbox, or ArgumentsInvalid when the
    # arguments name something that is not the requester's (an edit must not redirect the call)
    authorize: Callable[[dict, object], list] | None = None
    # (arguments, requester) -> {language: {"description", "impact"}} (models.said): an edit is described
    # anew, so the request's headline says what its current arguments do
    describe: Callable[[dict, object], dict] | None = None
    # (arguments, requester) -> why the tool will certainly refuse these cleaned arguments, a sentence in
    # the reader's language, or None: the tool's own check, read-only, of the requester's objects only
    # (approvals/refusals.py); a reviewer's edit it refuses is not approved
    refuses: Callable[[dict, object], str | None] | None = None
    # what the tool does, for people (the policy pages): a gettext_noop msgid, said per reader; the
    # description is the model's (instructions in English), shown to no reviewer
    summary: str = ""
    # {argument path ("steps.*.status" for an array's items): label msgid} the tool's author gave
    # (pydantic Field titles, gettext_noop): the argument editor's labels, said per reader
    # (approvals/reader_schema.py); none for a tool whose schema is someone else's (an MCP server's)
    labels: dict = field(default_factory=dict)


_registry: dict[str, ToolDefaults] = {}
_sources = []  # refresh hooks of tools registered from data (agents' MCP servers): asked before answering
_agent_names = set()  # this project's agents' names, casefolded (register_agent_name)


class InvalidDefaults(Exception):
    """A tool's code defaults break the policy rules: refused at start-up, never at run time."""


def register(defaults: ToolDefaults):
    group = defaults.approver.split(":", 1)[1] if defaults.approver.startswith("group:") else None
    escalation = defaults.escalation.split(":", 1)[1] if defaults.escalation.startswith("group:") else None
    errors = policy_errors({
        "tool_name": defaults.name, "mode": defaults.mode, "conditions": defaults.conditions,
        "approver_kind": "group" if group else "requester", "approver_group": group,
        "required_approvals": defaults.required_approvals, "timeout_seconds": defaults.timeout_seconds,
        "timeout_action": defaults.timeout_action, "risk": defaults.risk,
        "reminder_fraction": defaults.reminder_fraction, "escalation_group": escalation,
        "escalation_fraction": defaults.escalation_fraction, "allowed_decisions": list(defaults.allowed_decisions),
    }, schema=defaults.schema, check_groups=False)
    if errors:
        raise InvalidDefaults(f"tool {defaults.name}: {errors}")
    _registry[defaults.name] = defaults


def register_agent_name(name):
    """One of this project's agents (agents.registry): its name is not an outside agent's to take."""
    _agent_names.add(name.strip().casefold())


def names_an_agent_here(name) -> bool:
    """Whether `name` is, but for case and spaces, the name of one of this project's agents: the inbox
    shows a request "via <name>" and filters by it, so a service account calling itself "banking"
    had its requests pass for those of the project's banking agent."""
    return name.strip().casefold() in _agent_names


def unregister(name):
    """A tool that is gone (its MCP server was removed or stopped listing it)."""
    _registry.pop(name, None)


def add_source(refresh):
    """refresh(): brings tools registered from data up to date (cheap when nothing changed)."""
    _sources.append(refresh)


def _refresh():
    for refresh in _sources:
        refresh()


def get(name) -> ToolDefaults | None:
    _refresh()
    return _registry.get(name)


def schema_of(name) -> dict | None:
    """The registered tool's arguments schema, which policy rules' paths are checked against."""
    defaults = get(name)
    return defaults.schema if defaults else None


def all_tools():
    _refresh()
    return dict(sorted(_registry.items()))
