"""@tool: a Python function becomes a model-callable tool with a JSON schema and approval defaults.

The schema comes from the type hints through pydantic; arguments are validated (extra fields
forbidden, JSON types strict) before policy, reviewers or the function ever see them. A tool
that acts on people's objects declares them (`objects=`): a call on an object that is not the
requester's is refused before policy is asked, again when a reviewer edits it, and again just
before it runs.
"""

import contextvars
import copy
import functools
import inspect
import json
import typing
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import pydantic
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from approvals import argument_errors, registry

from .sentences import Sentence


@dataclass
class ToolContext:
    user: Any
    thread: Any
    run: Any
    forwarded_props: dict = field(default_factory=dict)
    tool_call_id: str = ""


_acting_for = contextvars.ContextVar("agui_acting_for", default=None)


def acting_for():
    """The user the tool call at hand acts for (while it is validated, described, judged and run),
    or None outside any call. Tools whose objects live in per-user places read it (ops' sandbox)."""
    return _acting_for.get()


@contextmanager
def on_behalf_of(user):
    token = _acting_for.set(user)
    try:
        yield
    finally:
        _acting_for.reset(token)


def _for(user):
    return on_behalf_of(user) if user is not None else nullcontext()


class ToolError(Exception):
    """A domain failure the model should hear about (insufficient funds, unknown account)."""


class OutcomeUnknown(Exception):
    """The call went out and no answer came back (a remote tool's server died or timed out): it may
    or may not have taken effect, so it is reported as outcome_unknown and never repeated."""


class Paused(Exception):
    """The running call stopped at a question to the person and let its worker go: its call is
    awaiting_input (agents/runtime/inputs.park) and the run pauses on `interrupt` (input_required).
    Answered, the call is approved again and its tool picks it up where it stopped (ToolCall.resume)."""

    def __init__(self, interrupt):
        super().__init__(interrupt.message)
        self.interrupt = interrupt


@dataclass(frozen=True)
class Owned:
    """An object a call acts on, as `objects=` reports it: whose it is (None: nobody's) and
    whether it must be the requester's (a transfer's destination need not). One that does not
    exist is left to the tool, which says so when it runs (nobody's object is touched)."""

    field: str  # the argument that names it
    kind: str  # "account"
    ref: str  # "1234567890"
    owner_id: int | None
    owner_name: str = ""
    mine: bool = True
    exists: bool = True
    state: str = ""  # how it stands now, for the reviewer ("delivered, 129.99 USD"); "" when not to be shown

    @classmethod
    def lookup(cls, field, kind, ref, row, mine=True, state=""):
        """From a (owner_id, owner username) row, or None when there is no such object."""
        if row is None:
            return cls(field, kind, ref, None, "", mine=mine, exists=False)
        return cls(field, kind, ref, row[0], row[1] or "", mine=mine, state=state)

    @property
    def label(self):
        return f"{self.kind} {self.ref}"


# "account 1234567890 is not yours": the kind is a msgid of its own (Owned.kind)
NOT_YOURS = Sentence(gettext_noop("%(kind)s %(ref)s is not yours"), words=("kind",))


# an approved call the policy in force blocks when its continuation comes to run it (Runner.blocked_now)
BLOCKED_NOW = Sentence(gettext_noop("It was approved, but the rules for this tool no longer allow it, so it was not run."))


class NotYours(ToolError):
    def __init__(self, obj: Owned):
        super().__init__(NOT_YOURS(kind=obj.kind, ref=obj.ref))
        self.obj = obj


@functools.cache
def _json_schema(model):
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def _inner_model(annotation):
    """(the pydantic model a field holds, whether in a list), else (None, False)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return _inner_model(args[0])
    if typing.get_origin(annotation) in (list, tuple) and args:
        model, _listed = _inner_model(args[0])
        return model, model is not None
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation, False
    return None, False


@functools.cache
def _labels(model, prefix=""):
    """{argument path: title msgid} of the fields given a title (Field(title=gettext_noop(...))):
    the argument editor's labels in the reader's language. The titles are kept out of the model's
    schema (_json_schema); pydantic's own titles (made from the names) are English, so none is used."""
    out = {}
    for name, info in model.model_fields.items():
        if info.title:
            out[prefix + name] = info.title
        inner, listed = _inner_model(info.annotation)
        if inner is not None:
            out.update(_labels(inner, prefix + name + (".*." if listed else ".")))
    return out


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
    objects: Callable[[dict], list[Owned]] | None = None  # the objects a call acts on, and whose they are
    summary: str = ""  # what it does, for people (a gettext_noop msgid); the description is the model's
    # what the tool's own records say of a call a dead worker left executing: recovery asks it
    # before it reports the outcome unknown (see `tool`)
    outcome: Callable[[str, dict], str | None] | None = None
    in_database: bool = False  # all it changes is rows of this database, in its own transactions
    # why it will certainly refuse these arguments (a sentence for people), or None (see `tool`)
    refuses: Callable[[dict], str | None] | None = None

    @property
    def schema(self):
        # pydantic builds the JSON schema anew on every call (~0.5 ms; every model turn lists every
        # tool): built once per model class, and each caller gets its own copy to change
        return copy.deepcopy(_json_schema(self.model))

    def openai_spec(self):
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.schema}}

    def validate(self, arguments, requester=None) -> dict:
        """Cleaned arguments (JSON-ready) or ArgumentsInvalid with {field: [messages]}; `requester`:
        whom the call acts for (else the user already acting_for), where that decides what a path means."""
        with _for(requester):
            return self._validate(arguments)

    def _validate(self, arguments):
        if not isinstance(arguments, dict):
            raise registry.ArgumentsInvalid({"__root__": ["arguments must be a JSON object"]})
        if inexact := argument_errors.inexact(arguments):
            raise registry.ArgumentsInvalid(inexact)
        try:
            text = json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise registry.ArgumentsInvalid({"__root__": ["arguments must be plain JSON"]}) from exc
        try:
            # JSON's own types, strictly: lax mode read `"amount": true` as 1.0 and "500" as 500
            return self.model.model_validate_json(text, strict=True).model_dump(mode="json")
        except pydantic.ValidationError as exc:
            # the paths as the arguments have them (pydantic names a union's members: "limit.int")
            raise registry.ArgumentsInvalid(argument_errors.from_pydantic(exc, self.model, data=arguments)) from exc

    def authorize(self, user, arguments, strict=False) -> list[dict]:
        """The objects the call acts on, for the people who judge it ([{object, owner}]); NotYours
        when one that must be the requester's is not. `strict` (arguments a person wrote: an edit, an
        outside agent's request): one that must be theirs and does not exist is not theirs either, said
        before anyone approves rather than by the tool's failure after (and alike whether it exists)."""
        if self.objects is None:
            return []
        with _for(user):
            touched = self.objects(arguments)
        for obj in touched:
            if obj.mine and not obj.exists and strict:
                raise NotYours(obj)
            if obj.mine and obj.exists and (obj.owner_id is None or obj.owner_id != getattr(user, "pk", None)):
                raise NotYours(obj)
        # for the reviewer's page, in the requester's words (the run's worker speaks their language); the
        # kind is marked where the tool names it (gettext_noop), and the model's own messages keep the English
        return [{"object": f"{gettext(obj.kind)} {obj.ref}", "owner": obj.owner_name or None,
                 **({"state": obj.state} if obj.state else {})}
                for obj in touched if obj.exists]

    def authorize_for(self, arguments, requester):
        """approvals' view of authorize (an edited call): the refusal names the requester."""
        try:
            return self.authorize(requester, arguments, strict=True)
        except NotYours as exc:
            raise registry.ArgumentsInvalid(
                {exc.obj.field: [gettext("%(object)s is not %(user)s's") % {
                    "object": exc.obj.label, "user": requester.get_username()}]}) from exc


    def refuses_for(self, arguments, requester):
        """approvals' view of refuses (an edited call), as the requester's call: their objects only."""
        with _for(requester):
            return self.refuses(arguments)

    def description_for(self, arguments):
        if self.describe:
            return self.describe(arguments)
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        return f"Call {self.name}({shown})"

    def impact_for(self, arguments):
        return self.impact(arguments) if callable(self.impact) else self.impact

    def said_for(self, arguments, requester=None):
        """approvals' view of said_in_every_language (an edited call), as the requester's call reads."""
        with _for(requester):
            return said_in_every_language(self, arguments)


    def run(self, ctx: ToolContext, arguments: dict):
        with _for(ctx.user):
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
            authorize=self.authorize_for if self.objects else None,
            describe=self.said_for,
            refuses=self.refuses_for if self.refuses else None,
            summary=self.summary,
            labels=_labels(self.model),
            **self.policy,
        )


def said_in_every_language(tool, arguments):
    """{language: {"description", "impact"}} of a call of `tool` (ours or an MCP server's: anything
    with description_for and impact_for) in every language of the site, for the request's readers
    (approvals.models.said): made once, when the call pauses, since a description may read the world
    as it is then (a file's size), which a page shown later must not read again."""
    said = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            said[code] = {"description": str(tool.description_for(arguments)),
                          "impact": str(tool.impact_for(arguments) or "")}
    return said


# outcome(): the call certainly took no effect (what it would have changed was written in one
# transaction with its record, and there is none): recovery may run it again
NOT_DONE = "not done"


def tool(approval_mode="never", approver="requester", describe=None, reversible=False, impact="",
         risk="low", idempotent=False, timeout_seconds=None, name=None, objects=None, summary="", outcome=None,
         in_database=False, refuses=None, **policy):
    """Declare a tool. The function's first parameter is the ToolContext; the rest are arguments.

    approval_mode: never | always | conditional | deny | model; `policy` takes the other code
    defaults of approvals.registry.ToolDefaults (conditions, required_approvals, timeout_action,
    reminder_fraction, escalation="group:<name>", escalation_fraction). A ToolPolicy row overrides
    them all. idempotent=True: safe to run again after a worker died mid-call (it is retried).
    objects(arguments) -> [Owned]: what the call acts on and whose it is (see Owned).
    summary: what it does in words for people (gettext_noop), shown on the policy pages instead of
    the docstring, which is the model's instructions.
    outcome(tool_call_id, arguments): for a call whose worker died while it ran, what the tool's own
    records say: the result the model reads (it took effect), NOT_DONE (it certainly did not: it is
    run again), or None (they cannot tell: the outcome is unknown, as for a tool without it).
    in_database=True: everything the tool changes is rows of this database, in transactions of its
    own; it sends nothing outside (mail, files, HTTP, MCP) and asks the person nothing. Its call's
    claim and its transactions then commit without waiting for the WAL's flush (queries.lazy_commits):
    the result's commit waits for them all before the result leaves.
    refuses(arguments) -> a sentence, or None: what the tool will refuse whatever happens before it runs
    (the same account on both sides), said up front so a reviewer's edit it refuses is not approved. A
    read of the requester's own objects only (acting_for()), in the reader's language; the tool's own
    refusal should come from the same code, so the two cannot disagree.
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
            objects=objects,
            summary=summary,
            outcome=outcome,
            in_database=in_database,
            refuses=refuses,
        )

    return wrap
