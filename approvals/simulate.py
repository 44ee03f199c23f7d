"""The policy console's simulator: replay recorded tool calls against a draft policy, unsaved.

This app knows nothing of agents, so the recorded calls come from a source the agents app
registers at start-up (agents/simulation.py): `register_call_source(fn)`, where
fn(tool_name, limit) returns the latest RecordedCalls of that tool, newest first.

The draft is judged the way approvals.policy.evaluate judges a saved policy (a test keeps the two
in step); what it cannot know is answered honestly: mode `model` asks the model at run time
("model"), and "always allow in this thread" grants are not replayed.
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.utils.translation import gettext, gettext_lazy

from . import rule_words, rules
from .models import Mode

OUTCOMES = {
    "gated": gettext_lazy("a person decides"),
    "denied": gettext_lazy("blocked"),
    "allowed": gettext_lazy("runs at once"),
    "model": gettext_lazy("the model's self-check decides"),
}
MAX_CALLS = 500
# how much review an outcome gives a call: a change to a lower rank loosens review, to a higher
# one tightens it ("model" is decided at run time: not counted either way)
STRICTNESS = {"allowed": 0, "gated": 1, "denied": 2}


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


def judge(policy, tool_name, scope, with_route=False):
    """(outcome, matched rule) of an unsaved ToolPolicy for one call's rule scope; with_route: and the
    matched gate rule's route in words ("treasury, 2 approvals, ...", else "")."""
    if with_route:
        outcome, matched = judge(policy, tool_name, scope)
        match = rules.first_match(policy.conditions, scope) if outcome == "gated" and policy.conditions else None
        return outcome, matched, rule_words.route_said(match.route) if match and match.route else ""
    mode = policy.mode
    if mode == Mode.NEVER:
        return "allowed", "mode never"
    if mode == Mode.DENY:
        return "denied", "mode deny"
    if mode == Mode.ALWAYS:
        return "gated", "mode always"
    if policy.conditions:
        try:
            match = rules.first_match(policy.conditions, scope)
        except rules.Unjudgeable as exc:
            return "denied", exc.label
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
    loosened: int = 0  # calls that would get less review than they had (gated -> allowed, denied -> gated ...)
    tightened: int = 0  # ... more review
    reviewed: int = 0  # calls a person decided then
    unreviewed: int = 0  # of those, the ones the draft lets run at once
    loosened_now: int = 0  # loosened calls that the policy in force (the baseline) still reviews as they were
    source: bool = True

    @property
    def summary(self):
        return [{"outcome": k, "label": v, "count": self.counts[k]} for k, v in OUTCOMES.items()]

    @property
    def loosening(self):
        """What a save must be confirmed against, in a sentence; "" when the draft loosens nothing."""
        if not self.loosened:
            return ""
        total = len(self.results)
        # counts after a colon: one sentence for 1 and for many (the catalogues hold no plural here)
        if self.unreviewed:
            text = gettext("Calls a person reviewed that would run without review under this draft: "
                           "%(unreviewed)s of the last %(reviewed)s.") % {
                "unreviewed": self.unreviewed, "reviewed": self.reviewed}
            if self.loosened > self.unreviewed:
                text += " " + gettext("Calls that would get less review in all: %(loosened)s of the last "
                                      "%(total)s recorded.") % {"loosened": self.loosened, "total": total}
            return text
        return gettext("Calls that would get less review under this draft than they had: %(loosened)s of the "
                       "last %(total)s recorded.") % {"loosened": self.loosened, "total": total}


_RULE_LABEL = re.compile(r"^rule (\d+) \((.*)\): (?:gate|deny|allow)$", re.S)  # rules.Match.label


def why(matched):
    """The matched rule in words for the table: "its mode", "rule 1 (bob is blocked)", "no rule
    matched", in the reader's language (judge() returns the engine's English)."""
    if matched.startswith("mode "):
        return gettext("its mode")
    if matched == "no rule matched":
        return gettext("no rule matched")
    if matched == "no rule matched: the model's self-check decides":
        return gettext("no rule matched: the model's self-check decides")
    rule = _RULE_LABEL.match(matched)
    if rule:
        return gettext("rule %(number)s (%(name)s)") % {"number": rule[1], "name": rule[2]}
    return matched


def direction(then, outcome):
    """"looser", "stricter" or "" (the same, unknown then, or decided by the model at run time)."""
    if then not in STRICTNESS or outcome not in STRICTNESS or then == outcome:
        return ""
    return "looser" if STRICTNESS[outcome] < STRICTNESS[then] else "stricter"


def simulate(policy, limit=50, baseline=None):
    """Judge the last `limit` recorded calls of policy.tool_name under the draft `policy`; with a
    `baseline` (the policy in force), also count the loosened calls it would not loosen itself, so
    that saving an already loose policy again (another field changed) is not asked about."""
    sim = Simulation(tool_name=policy.tool_name, limit=limit, source=has_call_source())
    users = {}  # the rule scope's user facts, once per user (a groups query each)
    for call in recorded_calls(policy.tool_name, limit):
        key = getattr(call.user, "pk", None)
        if key not in users:
            users[key] = rules.scope_for(call.tool_name, {}, {"user": call.user})["user"]
        scope = {"args": call.arguments or {}, "user": users[key], "agent": call.agent or "",
                 "thread": call.thread or "", "tool": call.tool_name}
        outcome, matched, route = judge(policy, call.tool_name, scope, with_route=True)
        changed = bool(call.outcome) and outcome != call.outcome and outcome != "model"
        way = direction(call.outcome, outcome)
        sim.counts[outcome] += 1
        sim.changed += changed
        sim.loosened += way == "looser"
        sim.loosened_now += way == "looser" and (
            baseline is None or direction(judge(baseline, call.tool_name, scope)[0], outcome) == "looser")
        sim.tightened += way == "stricter"
        sim.reviewed += call.outcome == "gated"
        sim.unreviewed += call.outcome == "gated" and outcome == "allowed"
        sim.results.append({"call": call, "outcome": outcome, "label": OUTCOMES[outcome], "matched": matched,
                            "why": why(matched), "route": route,
                            "then": call.outcome, "then_label": OUTCOMES.get(call.outcome, ""),
                            "changed": changed, "direction": way})
    return sim
