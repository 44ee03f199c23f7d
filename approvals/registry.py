"""Code defaults of every gated tool, registered at start-up by the apps that own the tools.

The engine uses them when no ToolPolicy row exists, and to validate a reviewer's edited
arguments without knowing anything about the tool's implementation.
"""

from collections.abc import Callable
from dataclasses import dataclass, field


class ArgumentsInvalid(Exception):
    def __init__(self, errors):
        super().__init__("invalid arguments")
        self.errors = errors  # {field path: [messages]}


@dataclass(frozen=True)
class ToolDefaults:
    name: str
    description: str
    schema: dict
    validate: Callable[[dict], dict]  # returns cleaned arguments or raises ArgumentsInvalid
    mode: str = "never"
    approver: str = "requester"  # "requester" or "group:<name>"
    risk: str = "medium"
    timeout_seconds: int | None = None
    timeout_action: str = "reject"
    required_approvals: int = 1
    extra: dict = field(default_factory=dict)


_registry: dict[str, ToolDefaults] = {}


def register(defaults: ToolDefaults):
    _registry[defaults.name] = defaults


def get(name) -> ToolDefaults | None:
    return _registry.get(name)


def all_tools():
    return dict(sorted(_registry.items()))
