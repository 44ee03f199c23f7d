"""A thread's shared state in runs and from people (DESIGN.md "State").

In a run (`StateSync`, owned by the Runner): while a mapped tool's arguments stream, predicted
values go out as STATE_DELTA (`add` the first time a key appears, then `replace`), throttled;
the first one records a live prediction, the complete arguments update it. When the call
settles, the prediction is committed with the arguments that ran (a reviewer's edits
included) or reverted, and a STATE_SNAPSHOT follows.

From people (`apply_user_patch`, `apply_client_state`): validated against the agent's schema,
refused when made from an old version (with the current document), broadcast on commit as
STATE_DELTA so that every tab on the thread converges.

Besides the AG-UI events, a CUSTOM `state_version` event {version, provisional: [{key,
toolCallId}]} tells clients the committed version (the base of their next change) and which
keys show a prediction rather than committed data. It is sent when there is something to
say (version > 0 or a live prediction), and always for agents that declare state.
"""

import logging
import uuid
from dataclasses import dataclass

import jsonpatch
from ag_ui.core import (
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from django.conf import settings
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from agents.agui import custom_events
from agents.messages import add_message
from agents.models import Message, Thread, ToolCall
from agents.registry import get_agent
from agents.runtime import notices
from agents.runtime.tools import ToolError
from agui_project import jsoncheck
from agui_project.queries import one
from state import predict
from state import services as state_services
from state.models import StateChange

log = logging.getLogger(__name__)

# a live prediction of a call in one of these states is settled by a continuation, not dropped
AWAITING_FATE = (
    ToolCall.Status.AWAITING_APPROVAL, ToolCall.Status.APPROVED, ToolCall.Status.REJECTED,
    ToolCall.Status.RESPONDED, ToolCall.Status.EXPIRED, ToolCall.Status.CANCELLED, ToolCall.Status.EXECUTING,
)
# a canned "not done" confirmation; a reviewer's guidance (responded) is left to the model to follow
REFUSED = (ToolCall.Status.REJECTED, ToolCall.Status.EXPIRED, ToolCall.Status.CANCELLED)


def has_state(agent):
    return bool(agent and (agent.state_schema or agent.predict_state_config))


def meta_event(doc, force=False):
    """CUSTOM state_version; without `force` only when there is something to say."""
    if not force and not doc.version and not doc.predictions:
        return None
    return custom_events.state_version(doc.version, doc.provisional)


class VersionRequired(state_services.StateConflict):
    code = "state_version_required"

    def __init__(self, document):
        super().__init__(document)
        self.args = (_("send the version your state was made from (forwardedProps.stateVersion / baseVersion); "
                       "the current version is %(version)s") % {"version": document.version},)


def error_payload(exc):
    """What a client needs to hear about a refused change: code, message, and what to retry from."""
    out = {"code": exc.code, "message": getattr(exc, "message", None) or str(exc)}
    if isinstance(exc, state_services.StateInvalid) and exc.errors:
        out["errors"] = exc.errors
    if isinstance(exc, state_services.StateTooLarge):
        out["limit"] = exc.limit
    doc = getattr(exc, "document", None)
    if doc is not None:
        out["version"] = doc.version
        out["snapshot"] = doc.view
    return out


def http_status(exc):
    """The HTTP status of a refused change, the same for REST and AG-UI."""
    if isinstance(exc, state_services.StateTooLarge):
        return 413
    return 422 if isinstance(exc, state_services.StateInvalid) else 409


# --- in a run -------------------------------------------------------------------------------


class StateSync:
    def __init__(self, runner):
        self.runner = runner
        self.key = runner.thread.state_key
        agent = self.declaring = runner.agent  # a workflow declares its participants' state together
        self.config = agent.predict_state_config if agent else None
        self.schema = agent.state_schema if agent else None
        self.strategy = agent.confirmation_strategy if agent else None
        self.interval = getattr(settings, "AGUI_STATE_DELTA_INTERVAL", predict.THROTTLE_SECONDS)
        self._predictions = {}  # tool call id -> predict.Prediction (None: not mapped)
        self._shown = {}  # tool call id -> keys clients already have (add vs replace)
        self.outcomes = []  # [(status, arguments)] of mapped calls settled in this run
        self.read_version = None  # the committed version the model was last shown (Runner.model_messages)

    def mapped(self, tool_name):
        return bool(self.config) and bool(predict.mappings(self.config, tool_name))

    def emit_snapshot(self):
        doc = state_services.document(self.key)
        self.runner.emit(StateSnapshotEvent(snapshot=doc.view))
        meta = meta_event(doc, force=has_state(self.declaring))  # also says "nothing is predicted now"
        if meta:
            self.runner.emit(meta)

    # streaming

    def on_args(self, call, chunk):
        if call["id"] not in self._predictions:
            mapped = self.mapped(call["name"])
            self._predictions[call["id"]] = (
                predict.Prediction(self.config, call["name"], interval=self.interval) if mapped else None
            )
        prediction = self._predictions[call["id"]]
        if prediction is not None:
            values = prediction.feed(chunk)
            if values:
                self._show(call, values)

    def on_end(self, call):
        prediction = self._predictions.get(call["id"])
        if prediction is None:
            return
        values = prediction.finish(call["arguments"])
        if values:
            self._show(call, values)
        if prediction.values is not None and self._predictions.get(call["id"]) is not None:
            self._predict(call, prediction.values)

    def _predict(self, call, values):
        """Record the prediction; None (and no more predictions for this call) when it breaks the
        state's limits: the call itself is refused with the reason when it is about to run (check)."""
        try:
            return state_services.predict(self.key, call["id"], values, run_ref=self.runner.run.pk,
                                          base_version=self.read_version)
        except state_services.StateInvalid as exc:
            log.warning("tool call %s: prediction dropped: %s", call["id"], exc.message)
            self._predictions[call["id"]] = None
            return None

    def _show(self, call, values):
        first = call["id"] not in self._shown
        if first:  # record the prediction before clients see it: people's edits to these keys now wait
            before = self._predict(call, values)
            if before is None:
                return
            self._shown[call["id"]] = set(before.view)
        elif not self._within_limits(call, values):
            return
        self.runner.emit(StateDeltaEvent(delta=predict.delta_ops(values, self._shown[call["id"]])))
        self._shown[call["id"]] |= set(values)
        if first:
            self.runner.emit(meta_event(state_services.document(self.key), force=True))

    def _within_limits(self, call, values):
        """A prediction that grew past the state's limits is shown no further (only its first values
        were checked, as they were recorded: the model's streaming arguments then went to every client,
        a delta of the whole growing value each time, however large); the call is refused when it
        is about to run (check) and what was shown is reverted with a snapshot."""
        try:
            state_services.check_value(values)
            size = state_services.size_of(values)
        except state_services.StateInvalid:
            size = None
        if size is not None and size <= state_services.max_bytes():
            return True
        log.warning("tool call %s: prediction past the state's limits; not shown further", call["id"])
        self._predictions[call["id"]] = None
        return False

    # settling

    def check(self, tc, arguments):
        """Before a state-writing tool runs: the state it would commit must match the schema."""
        if not self.mapped(tc.name):
            return
        data, _version = state_services.snapshot(self.key)
        values = predict.values_from_arguments(self.config, tc.name, arguments)
        try:
            with translation.override(None):  # the model reads why: in the words it is written in
                state_services.check_document({**data, **values}, before=data)  # size, depth, text
                state_services.validate({**data, **values}, self.schema)
        except state_services.StateInvalid as exc:  # StateTooLarge too
            raise ToolError(f"the new state was refused, nothing changed: {exc.message}") from exc
        # A person's edit made after the model read the state is not overwritten unseen: the call
        # fails with what they changed, and the model's next turn reads the current state. (Edits
        # to keys a live prediction shows are refused meanwhile, so this covers the time before it.)
        base = state_services.prediction_base(self.key, tc.pk)
        base = self.read_version if base is None else base
        changed = state_services.people_changed_since(self.key, base, values) if base is not None else {}
        if changed:
            raise ToolError(
                f"the shared state changed after you read it: a person edited {', '.join(changed)}. Nothing was "
                f"changed and their edit stands. You are shown the current state from now on; if your change is "
                f"still wanted, call {tc.name} again based on it.")

    def on_result(self, tc):
        """A call got its result: commit its prediction if it ran, else revert it; then a snapshot."""
        if not self.mapped(tc.name):
            return
        row = ToolCall.objects.values("status", "arguments", "final_arguments").get(pk=tc.pk)
        arguments = row["final_arguments"] if row["final_arguments"] is not None else row["arguments"]
        changed = False
        if row["status"] == ToolCall.Status.SUCCEEDED:
            values = predict.values_from_arguments(self.config, tc.name, arguments)
            try:
                state_services.commit_prediction(self.key, tc.pk, values, schema=self.schema,
                                                 run_ref=self.runner.run.pk)
                changed = True
            except state_services.StateInvalid:
                log.exception("tool call %s: state refused after the tool ran", tc.pk)
                changed = state_services.revert_prediction(self.key, tc.pk)
        else:
            changed = state_services.revert_prediction(self.key, tc.pk)
        self.outcomes.append((row["status"], arguments))
        if changed:
            self.emit_snapshot()

    def release(self):
        """At the end of a run: drop live predictions that no decision is going to settle."""
        try:
            doc = state_services.document(self.key)
            refs = {ref for ref, _values in doc.predictions}
            if not refs:
                return
            keep = set(ToolCall.objects.filter(pk__in=refs, status__in=AWAITING_FATE).values_list("pk", flat=True))
            if state_services.revert_predictions(self.key, keep=keep):
                self.emit_snapshot()
        except Exception:  # the run is ending anyway (maybe because of this very error): report, go on
            log.exception("run %s: could not release its predictions", self.runner.run.pk)

    def confirmation(self, settled):
        """The agent's confirmation text when every call a continuation settled wrote state, else None."""
        if not settled or len(self.outcomes) != len(settled) or self.strategy is None:
            return None
        statuses = {status for status, _ in self.outcomes}
        steps = [s for _, args in self.outcomes for s in (args or {}).get("steps") or [] if isinstance(s, dict)]
        if statuses == {ToolCall.Status.SUCCEEDED}:
            return self.strategy.on_approval_accepted(steps) if steps else self.strategy.on_state_confirmed()
        if statuses <= set(REFUSED):
            return self.strategy.on_approval_rejected(steps) if steps else self.strategy.on_state_rejected()
        return None  # mixed, or a failure: the model explains

    def say(self, text):
        """An assistant message that does not come from the model."""
        message_id = str(uuid.uuid4())
        self.runner.emit(TextMessageStartEvent(message_id=message_id, role="assistant"))
        self.runner.emit(TextMessageContentEvent(message_id=message_id, delta=text))
        self.runner.emit(TextMessageEndEvent(message_id=message_id))
        add_message(self.runner.thread, Message.Role.ASSISTANT, text, run=self.runner.run, message_id=message_id)


# --- from people ----------------------------------------------------------------------------


def _broadcast(thread_id, key, ops):
    """After the change committed: a Redis outage loses only the notice (the chats' sockets close with
    4011 meanwhile, and their fresh snapshot carries the state); the change stands and is answered."""
    doc = state_services.document(key)
    notices.tell(thread_id, StateDeltaEvent(delta=ops), meta_event(doc, force=True), what="a state change")


def _schema(thread):
    agent = get_agent(thread.agent)
    return agent.state_schema if agent else None


def apply_user_patch(thread, user, patch, base_version):
    """A person's JSON Patch; returns (ops applied, new version). Raises state_services.StateError."""
    if base_version is None:
        raise VersionRequired(state_services.document(thread.state_key))
    with transaction.atomic():
        ops = state_services.apply_patch(thread.state_key, patch, source=StateChange.Source.USER, user=user,
                                         base_version=base_version, schema=_schema(thread))
        if ops:
            transaction.on_commit(lambda: _broadcast(thread.pk, thread.state_key, ops))
    return ops, state_services.snapshot(thread.state_key)[1]


@dataclass
class NotApplied:
    """A client's state the run goes on without (it says so in-stream): code and a sentence."""

    code: str
    message: str


def apply_client_state(thread, user, state, base_version):
    """A client's whole state (AG-UI RunAgentInput.state): the difference from what it was shown
    is applied as the person's change. Returns the ops applied, or NotApplied.

    `{}` (HttpAgent's default) means no state was sent. With a base version (our clients send
    forwardedProps.stateVersion) a stale change is refused (StateConflict). Stock clients send
    their last state on every run and no version: a state equal to a version they were sent is
    an echo, not an edit; a real change is taken against the recorded version nearest to it,
    merged only when nothing it touches changed since (it must not overwrite what that client
    has not seen); otherwise the run goes on with the server's state.
    """
    if state is None or state == {}:
        return []
    doc = state_services.document(thread.state_key)
    if jsoncheck.same(state, doc.view):
        return []
    if base_version is not None:
        return replace_user_state(thread, user, state, base_version)
    if not doc.version and not doc.predictions:
        return replace_user_state(thread, user, state, 0)  # never written: there is nothing to overwrite
    nearest = state_services.closest_version(thread.state_key, state)
    if nearest is None:
        return _not_applied(_("it does not say which version it was made from, and this chat's state has too "
                              "long a history to tell"))
    version, data = nearest
    if jsoncheck.same(data, state):
        return []  # an echo of a version it was sent
    ops = jsonpatch.make_patch(data, state).patch
    touched = state_services.touched_keys(ops)
    moved = state_services.keys_changed_since(thread.state_key, version) | set(doc.provisional)
    clash = touched & moved
    if clash or ("" in touched and moved) or "" in moved:
        return _not_applied(_("it changes what changed here since your client last saw it (%(keys)s)") % {
            "keys": ", ".join(sorted(clash - {""})) or _("the whole state")})
    try:
        return apply_user_patch(thread, user, ops, doc.version)[0]
    except (state_services.StateConflict, state_services.PredictionPending):  # changed under us just now
        return _not_applied(_("the chat's state changed at the same moment"))


def _not_applied(why):
    return NotApplied("state_not_applied", _("The state your client sent was not applied: %(why)s. The run uses the "
                                             "chat's current state (sent to you now); make your change again on "
                                             "it.") % {"why": why})


def replace_user_state(thread, user, state, base_version):
    """A person's whole document (`{}` clears it); returns the ops applied. Raises StateError."""
    if base_version is None:
        raise VersionRequired(state_services.document(thread.state_key))
    with transaction.atomic():
        ops = state_services.replace(thread.state_key, state, source=StateChange.Source.USER, user=user,
                                     base_version=base_version, schema=_schema(thread))
        if ops:
            transaction.on_commit(lambda: _broadcast(thread.pk, thread.state_key, ops))
    return ops


def document_payload(thread):
    """The state as a REST client reads it: what is shown, its committed version, what is predicted."""
    doc = state_services.document(thread.state_key)
    return {"version": doc.version, "state": doc.view,
            "provisional": [{"key": key, "tool_call_id": ref} for key, ref in doc.provisional.items()]}


def socket_patch(thread_id, user, msg):
    """A `{"type": "state_patch", "baseVersion": n, "patch": [...], "ref"?}` frame -> the reply frame."""
    ref = msg.get("ref")
    extra = {"ref": ref} if isinstance(ref, (str, int)) and not isinstance(ref, bool) else {}
    base = msg.get("baseVersion")
    thread = one(Thread.objects.filter(pk=thread_id))
    if thread is None:
        return {"type": "error", "code": "not_found", "message": _("this thread no longer exists"), **extra}
    if base is not None and (not isinstance(base, int) or isinstance(base, bool) or base < 0):
        return {"type": "error", "code": "state_invalid", "message": _("baseVersion must be a non-negative integer"),
                **extra}
    try:
        ops, version = apply_user_patch(thread, user, msg.get("patch"), base)
    except state_services.StateError as exc:
        return {"type": "error", **error_payload(exc), **extra}
    return {"type": "state_ack", "version": version, "applied": len(ops), **extra}
