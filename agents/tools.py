"""@tool: a Python function becomes a model-callable tool with a JSON schema and approval defaults.

The schema comes from the type hints through pydantic; arguments are validated (extra fields
forbidden) before policy, reviewers or the function ever see them.
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic

from approvals import registry


@dataclass
class ToolContext:
    user: Any
    thread: Any
    run: Any
    forwarded_props: dict = field(default_factory=dict)
    tool_call_id: str = ""


class ToolError(Exception):
    """A domain failure the model should hear about (insufficient funds, unknown account)."""


@dataclass
class Tool:
    name: str
    description: str
    func: Callable
    model: type[pydantic.BaseModel]
    approval_mode: str = "never"
    approver: str = "requester"
    describe: Callable[[dict], str] | None = None
    reversible: bool = False
    impact: str | Callable[[dict], str] = ""
    risk: str = "low"
    idempotent: bool = False
    timeout_seconds: int | None = None
    policy: dict = field(default_factory=dict)  # further ToolDefaults: conditions, required_approvals, ...

    @property
    def schema(self):
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    def openai_spec(self):
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.schema}}

    def validate(self, arguments) -> dict:
        """Cleaned arguments (JSON-ready) or ArgumentsInvalid with {field: [messages]}."""
        if not isinstance(arguments, dict):
            raise registry.ArgumentsInvalid({"__root__": ["arguments must be a JSON object"]})
        try:
            return self.model.model_validate(arguments).model_dump(mode="json")
        except pydantic.ValidationError as exc:
            errors = {}
            for err in exc.errors():
                errors.setdefault(".".join(str(p) for p in err["loc"]) or "__root__", []).append(err["msg"])
            raise registry.ArgumentsInvalid(errors) from exc

    def description_for(self, arguments):
        if self.describe:
            return self.describe(arguments)
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        return f"Call {self.name}({shown})"

    def impact_for(self, arguments):
        return self.impact(arguments) if callable(self.impact) else self.impact

    def run(self, ctx: ToolContext, arguments: dict):
        return self.func(ctx, **arguments)

    def defaults(self):
        return registry.ToolDefaults(
            name=self.name,
            description=self.description,
            schema=self.schema,
            validate=self.validate,
            mode=self.approval_mode,
            approver=self.approver,
            risk=self.risk,
            timeout_seconds=self.timeout_seconds,
            idempotent=self.idempotent,
            reversible=self.reversible,
            **self.policy,
        )


def tool(approval_mode="never", approver="requester", describe=None, reversible=False, impact="",
         risk="low", idempotent=False, timeout_seconds=None, name=None, **policy):
    """Declare a tool. The function's first parameter is the ToolContext; the rest are arguments.

    approval_mode: never | always | conditional | deny | model; `policy` takes the other code
    defaults of approvals.registry.ToolDefaults (conditions, required_approvals, timeout_action,
    reminder_fraction, escalation="group:<name>", escalation_fraction). A ToolPolicy row overrides
    them all. idempotent=True: safe to run again after a worker died mid-call (it is retried).
    """
    unknown = set(policy) - {"conditions", "required_approvals", "timeout_action", "reminder_fraction",
                             "escalation", "escalation_fraction"}
    if unknown:
        raise TypeError(f"@tool got unknown option(s): {', '.join(sorted(unknown))}")

    def wrap(func):
        params = list(inspect.signature(func).parameters.values())[1:]
        hints = inspect.get_annotations(func, eval_str=True)
        fields = {
            p.name: (hints.get(p.name, Any), ... if p.default is inspect.Parameter.empty else p.default) for p in params
        }
        tool_name = name or func.__name__
        model = pydantic.create_model(
            f"{tool_name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
        return Tool(
            name=tool_name,
            description=inspect.cleandoc(func.__doc__ or tool_name),
            func=func,
            model=model,
            approval_mode=approval_mode,
            approver=approver,
            describe=describe,
            reversible=reversible,
            impact=impact,
            risk=risk,
            idempotent=idempotent,
            timeout_seconds=timeout_seconds,
            policy=policy,
        )

    return wrap
