"""The policy console's simulator: replay recorded tool calls against a draft policy, unsaved.

This app knows nothing of agents, so the recorded calls come from a source the agents app
registers at start-up (agents/simulation.py): `register_call_source(fn)`, where
fn(tool_name, limit) returns the latest RecordedCalls of that tool, newest first.

The draft is judged the way approvals.policy.evaluate judges a saved policy (a test keeps the two
in step); what it cannot know is answered honestly: mode `model` asks the model at run time
("model"), and "always allow in this thread" grants are not replayed.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from . import rules
from .models import Mode

OUTCOMES = {
    "gated": "a person decides",
    "denied": "blocked",
    "allowed": "runs at once",
    "model": "the model's self-check decides",
}
MAX_CALLS = 500


@dataclass
class RecordedCall:
    id: str
    tool_name: str
    arguments: dict
    created_at: datetime
    user: object = None  # the requesting user (rules may look at user.*)
    agent: str = ""
    thread: str = ""
    outcome: str = ""  # what happened then: gated | denied | allowed | "" (unknown)
    status: str = ""  # the call's status, for display


_source = None


def register_call_source(fn):
    global _source
    _source = fn


def has_call_source():
    return _source is not None


def recorded_calls(tool_name, limit):
    if _source is None:
        return []
    return list(_source(tool_name, max(1, min(int(limit), MAX_CALLS))))


def judge(policy, tool_name, scope):
    """(outcome, matched rule) of an unsaved ToolPolicy for one call's rule scope."""
    mode = policy.mode
    if mode == Mode.NEVER:
        return "allowed", "mode never"
    if mode == Mode.DENY:
        return "denied", "mode deny"
    if mode == Mode.ALWAYS:
        return "gated", "mode always"
    if policy.conditions:
        match = rules.first_match(policy.conditions, scope)
        if match:
            return {"gate": "gated", "deny": "denied", "allow": "allowed"}[match.action], match.label
    if mode == Mode.CONDITIONAL:
        return "allowed", "no rule matched"
    return "model", "no rule matched: the model's self-check decides"


@dataclass
class Simulation:
    tool_name: str
    limit: int
    results: list = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    changed: int = 0
    source: bool = True

    @property
    def summary(self):
        return [{"outcome": k, "label": v, "count": self.counts[k]} for k, v in OUTCOMES.items()]


def simulate(policy, limit=50):
    """Judge the last `limit` recorded calls of policy.tool_name under the draft `policy`."""
    sim = Simulation(tool_name=policy.tool_name, limit=limit, source=has_call_source())
    users = {}  # the rule scope's user facts, once per user (a groups query each)
    for call in recorded_calls(policy.tool_name, limit):
        key = getattr(call.user, "pk", None)
        if key not in users:
            users[key] = rules.scope_for(call.tool_name, {}, {"user": call.user})["user"]
        scope = {"args": call.arguments or {}, "user": users[key], "agent": call.agent or "",
                 "thread": call.thread or "", "tool": call.tool_name}
        outcome, matched = judge(policy, call.tool_name, scope)
        changed = bool(call.outcome) and outcome != call.outcome and outcome != "model"
        sim.counts[outcome] += 1
        sim.changed += changed
        sim.results.append({"call": call, "outcome": outcome, "label": OUTCOMES[outcome], "matched": matched,
                            "then": call.outcome, "changed": changed})
    return sim
