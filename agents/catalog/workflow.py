"""A workflow's definition: a graph of agents (participants, handoff edges, a start agent, a
termination condition). The loop that runs it is agents/runtime/workflows.py's WorkflowRunner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from state import services as state_services

from .agent import Agent

# the tools every workflow gives its agents' models (agents/runtime/workflows.py runs them)
HANDOFF_PREFIX = "handoff_to_"
REQUEST_INFO = "request_info"


# the demo's closing words: a model told in English ends its message with "Case complete."; the offline demo
# model, answering in the customer's language, with these words in it
CASE_COMPLETE = gettext_noop("%(reply)s Case complete.")


def case_complete(reply):
    """`reply`, closed as the demo's workflow ends a case, in the active language."""
    return gettext(CASE_COMPLETE) % {"reply": reply}


@cache
def _closings(_languages):
    out = {"case complete."}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            out.add(gettext(CASE_COMPLETE).rsplit("%(reply)s", 1)[-1].strip().lower())
    return tuple(word for word in out if word)


def ends_case(text):
    """Whether `text` closes the case, in English or in any language of the site."""
    said = (text or "").strip().lower()
    return any(said.endswith(word) for word in _closings(tuple(settings.LANGUAGES)))


def ends_with_case_complete(conversation):
    """The demo's termination condition: the last assistant message ends with "case complete." (or the
    same words in the language it was said in)."""
    for msg in reversed(conversation):
        if msg["role"] == "assistant" and msg["content"]:
            return ends_case(msg["content"])
    return False


@dataclass
class Handoff:
    source: str
    target: str
    description: str = ""


@dataclass
class Workflow(Agent):
    """An agent made of agents. `system_prompt` is unused: each participant brings its own."""

    participants: list = field(default_factory=list)  # catalog Agents
    handoffs: list = field(default_factory=list)  # Handoff edges
    start: str = ""
    # conversation of the current case, [{"role", "content"}], -> finished?
    terminate: Callable[[list], bool] = ends_with_case_complete
    # after a decision on a state-writing call the active participant's model answers, not a template
    confirmation_strategy: object = None

    def __post_init__(self):
        names = [a.name for a in self.participants]
        if self.state_schema is None and self.predict_state_config is None:
            # the thread has one state document: what every participant declares, together
            self.predict_state_config, self.state_schema = merged_state(self.participants, self.name)
        if self.start not in names:
            raise ValueError(f"workflow {self.name}: start agent {self.start!r} is not a participant")
        for h in self.handoffs:
            if h.source not in names or h.target not in names:
                raise ValueError(f"workflow {self.name}: handoff {h.source} -> {h.target} names an unknown agent")
        if not self.tools:  # every participant's tools, once: approvals registry and agent cards
            seen = {}
            for agent in self.participants:
                for t in agent.tools:
                    seen.setdefault(t.name, t)
            self.tools = list(seen.values())

    def participant(self, name):
        return next((a for a in self.participants if a.name == name), None)

    def targets(self, source):
        return [h for h in self.handoffs if h.source == source]

    def tool_names(self):
        """Any participant may become the active one: each one's tools, and the workflow's own."""
        return {REQUEST_INFO, *(HANDOFF_PREFIX + h.target for h in self.handoffs), *super().tool_names(),
                *(name for a in self.participants for name in a.tool_names())}

    def card(self):
        """The graph for agent cards (GET /agui/, the chat's picker)."""
        return {
            "start": self.start,
            "agents": [{"name": a.name, "title": a.title, "description": a.description,
                        "tools": [t.name for t in a.tools],
                        "handoffs": [h.target for h in self.targets(a.name)]} for a in self.participants],
        }


_PLAIN_OBJECT_KEYS = {"type", "properties", "additionalProperties", "required", "$defs"}


def merged_state(participants, workflow_name):
    """(predict_state_config, state_schema) of a workflow from its participants' declarations.

    Object schemas (agents.catalog.agent.state_schema writes them) are merged key by key, so that
    `additionalProperties: false` in one does not refuse another's keys; any other form is
    combined with allOf. Two participants may share a key only when they declare it alike.
    """
    config, schemas = {}, []
    for agent in participants:
        for key, mapping in (agent.predict_state_config or {}).items():
            if config.setdefault(key, mapping) != mapping:
                raise ValueError(f"workflow {workflow_name}: participants predict state key {key!r} differently")
        if agent.state_schema:
            schemas.append(state_services.json_schema(agent.state_schema))
    if len(schemas) <= 1:
        return config or None, schemas[0] if schemas else None
    if not all(s.get("type") == "object" and set(s) <= _PLAIN_OBJECT_KEYS for s in schemas):
        return config or None, {"allOf": schemas}
    merged = {"type": "object", "properties": {}}
    for schema in schemas:
        for section in ("properties", "$defs"):
            for key, value in schema.get(section, {}).items():
                if merged.setdefault(section, {}).setdefault(key, value) != value:
                    raise ValueError(f"workflow {workflow_name}: participants define state {section} {key!r} differently")
        merged["required"] = sorted(set(merged.get("required", [])) | set(schema.get("required", [])))
    if not merged["required"]:
        del merged["required"]
    if all(s.get("additionalProperties") is False for s in schemas):
        merged["additionalProperties"] = False
    return config or None, merged
