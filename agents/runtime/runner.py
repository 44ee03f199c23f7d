"""The agent loop: stream the model -> tool calls -> policy -> execute | pause (DESIGN.md steps 2-7)."""

import json
import logging
import time
import uuid
from contextlib import nullcontext
from types import SimpleNamespace

import jsonpatch
import jsonpointer
import redis
from ag_ui.core import (
    Interrupt,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from django import db
from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents import llm, presenters, selectors
from agents.agui import custom_events
from agents.llm import (
    AnswerCut,
    BrokenStream,
    ModelError,
    ModelUnavailable,
    NoAnswer,
    ReasoningDelta,
    TextDelta,
    get_model,
)
from agents.models import Message, Run, ToolCall
from agents.registry import get_agent, loop_for
from agents.runtime import execution
from agents.runtime.events import EventStream, StreamUnavailable, encode
from agents.runtime.statesync import StateSync
from agents.runtime.tools import (
    BLOCKED_NOW,
    OutcomeUnknown,
    Paused,
    ToolContext,
    ToolError,
    on_behalf_of,
    said_in_every_language,
)
from agents.services import (
    FEEDBACK_MAX,
    add_message,
    add_messages,
    answered_by_requester,
    cancel_requested,
    cancel_run,
)
from agents.transitions import claim_ahead, claim_run, move_call, move_run
from agui_project import jsoncheck
from agui_project.queries import Prepared, PreparedInsert, drop_if_hung_up, lazy_commits, one, read_ahead
from approvals import policy
from approvals import selectors as approval_selectors
from approvals import services as approval_services
from approvals.models import ApprovalRequest, ApproverKind
from approvals.registry import ArgumentsInvalid
from state import services as state_services

log = logging.getLogger(__name__)
EXCERPT_MESSAGES = 10  # tool results count: a lookup and its answer are two
EXCERPT_CHARS = 1000  # of each message
CANCEL_CHECK_SECONDS = 0.05  # how often a streaming run looks for a Stop
ID_MAX_LENGTH = ToolCall._meta.pk.max_length
NAME_MAX_LENGTH = ToolCall._meta.get_field("name").max_length
NOT_BUILTIN = object()  # Runner.builtin_call: "not one of mine, handle it as a tool"


class RunCancelled(Exception):
    pass


class TurnLimit(Exception):
    """The model was still calling tools when the run's turns (AGUI_MAX_TURNS) ran out."""


class RunLost(Exception):
    """This worker no longer holds the run (recovery declared it lost): stop, write nothing more."""


# the run a worker claimed, with its thread, owner and the owner's language (people.Profile, by its
# relation's name): compiled once (agui_project/queries.Prepared)
_CLAIMED = Prepared(Run, lambda pk: Run.objects.select_related("thread", "thread__owner", "thread__owner__profile")
                    .filter(pk=pk))
# a continuation's decided calls that have no result yet, oldest first (Runner.settle): compiled once
_SETTLEABLE = Prepared(ToolCall, lambda thread_id: ToolCall.objects.filter(
    thread_id=thread_id, status__in=ToolCall.SETTLEABLE).exclude(pk__in=Message.objects.filter(
        thread_id=thread_id, role=Message.Role.TOOL).values("tool_call_id")).select_related("message").order_by(
            "created_at"))

_TOOL_CALL = PreparedInsert(ToolCall)  # every call the model makes: its INSERT compiled once
# whether a call id the model gave is taken already, in any thread (Runner.call_id): on every call
_CALL_TAKEN = Prepared(ToolCall, lambda pk: ToolCall.objects.filter(pk=pk).values_list("pk"))


def run_agent(run_id, made=None):
    """Claim a queued run (a second delivery of the task finds nothing) and execute it. `made`: the
    Run as this process made it, with its thread, owner and profile (a decision's continuation,
    agents/tasks.py): once claimed it is not read back."""
    started = timezone.now()
    # the claim and the read of the run it claimed in one round trip (PostgreSQL; the read is
    # wasted on a second delivery, which claims nothing). The claim's commit does not wait for the
    # WAL's flush: a tool call's claim waits for it (and so for the run's) before any side effect.
    ahead = [claim_ahead(run_id, started, made)] + ([] if made is not None else [(_CLAIMED, (run_id,))])
    with read_ahead(ahead, lazy_commit=True):
        claimed = claim_run(run_id, started, made)
        run = (made if made is not None else _CLAIMED.one(run_id)) if claimed else None
    if claimed:
        with execution.run_lease(run_id):  # lapses if this worker dies: recovery then takes the run over
            if run is None:  # deleted with its thread since the claim
                raise Run.DoesNotExist(run_id)
            # what people read of the run (tool outcomes, errors) in the chat owner's language, read
            # with the run (the model's own words stay as written)
            with translation.override(selectors.user_language(run.thread.owner)):
                runner_for(run).execute()
    return bool(claimed)


# the model's provider refused a request: what the person reads, by the error's code or HTTP status
TOO_LONG = {"context_length_exceeded", "string_above_max_length", "request_too_large"}
FILTERED = {"content_filter", "content_policy_violation"}


def model_refusal(exc):
    """(the person's sentence, whether it is the operators' to mend) for a ModelError: not the
    provider's own text, which quotes its JSON and, for a wrong key, the key's tail."""
    if exc.http_status in (401, 403):
        return _("The model's provider refused this server's credentials, so the run stopped. An administrator "
                 "needs to check the model settings."), True
    if exc.http_status == 404:
        return _("The model this agent uses was not found at its provider, so the run stopped. An administrator "
                 "needs to check the model settings."), True
    if exc.code in TOO_LONG or exc.http_status == 413:
        return _("The conversation is too long for the model, so the run stopped. Start a new chat, or ask for "
                 "less at once."), False
    if exc.code in FILTERED:
        return _("The model's provider declined this request under its content rules. Put your request another "
                 "way."), False
    return _("The model's provider refused the request, so the run stopped. Retry, or put your request another "
             "way."), False


def arguments_refused(exc):
    """What the model reads of arguments the JSON gate or the tool's schema refused."""
    if isinstance(exc, json.JSONDecodeError):
        return f"Error: the arguments are not valid JSON ({exc.msg}); nothing was executed."
    if isinstance(exc, jsoncheck.Refused):
        return f"Error: the arguments are not usable JSON ({exc.refusal.message}); nothing was executed."
    problems = "; ".join(f"{k}: {', '.join(v)}" for k, v in exc.errors.items())
    return f"Error: invalid arguments ({problems}); nothing was executed."


def runner_for(run):
    """The thread's agent may bring its own loop (a workflow: agents/runtime/workflows.py WorkflowRunner)."""
    return loop_for(get_agent(run.thread.agent), Runner)(run)


def conversation_excerpt(thread):
    """The last messages before a paused call, for its reviewer: what was asked, said, and what the
    tools answered (a lookup's result is the evidence for a refund), each tool result named."""
    messages = list(reversed(thread.messages.order_by("-seq")[:EXCERPT_MESSAGES]))
    names = {c.get("id"): (c.get("function") or {}).get("name", "")
             for m in messages for c in (m.tool_calls or []) if isinstance(c, dict)}
    ids = [m.tool_call_id for m in messages if m.role == Message.Role.TOOL and m.tool_call_id]
    calls = {c.pk: c for c in ToolCall.objects.filter(pk__in=ids, thread=thread)} if ids else {}
    excerpt = []
    for m in messages:
        if m.role == Message.Role.TOOL:
            excerpt.append({"role": "tool", "name": names.get(m.tool_call_id) or "tool",
                            **_result_for_people(m, calls.get(m.tool_call_id))})
        elif m.content:
            excerpt.append({"role": m.role, **_excerpted(m.content)})
    return excerpt


def _result_for_people(message, call):
    """A tool message in the excerpt: what the call did or why it did not run, as the chat's card says it
    (presenters.outcome_words), in every language of the site where that differs ("said", which
    approvals.models.said reads); not the instructions the model reads with it. A client's own tool's
    result, with no call of ours behind it, as it came."""
    with translation.override(settings.LANGUAGE_CODE):
        words = presenters.outcome_words(call) if call else None
    if words is None:
        return _excerpted(message.content)
    shown = _excerpted(words)
    if "cut" in shown:  # a long result: the tool's own words, not a sentence of ours to translate
        return shown
    said = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            other = presenters.outcome_words(call)
        if other and other != words and len(other) <= EXCERPT_CHARS:
            said[code] = {"content": other}
    return {**shown, **({"said": said} if said else {})}


def _excerpted(content):
    """A message's words for the excerpt: at most EXCERPT_CHARS, and how many more were cut (the
    reviewer is told, and reads the rest in the whole conversation): a cut that said nothing left
    out the end of a person's message, which may be the sentence that mattered."""
    if len(content) <= EXCERPT_CHARS:
        return {"content": content}
    return {"content": content[:EXCERPT_CHARS], "cut": len(content) - EXCERPT_CHARS}


def rejection_text(call):
    """Seed 003's rejection message: the person refused, their words, and no detours."""
    feedback = f'Their feedback: "{call.feedback}".' if call.feedback else "They gave no feedback."
    return (
        f"The call to {call.name} was explicitly rejected by the person reviewing it, so it was not executed. "
        f"{feedback} Adjust your plan: do not try to reach the same goal another way unless the user "
        "explicitly tells you to."
    )


def guidance_text(call):
    """A reviewer's respond: neither approval nor rejection; their words are the call's result."""
    return (
        f"The person reviewing the call to {call.name} did not run it and says: \"{call.feedback}\". "
        "Nothing was executed. Follow their guidance: change your plan or the call as they say, or ask the "
        "user if their guidance needs an answer from them."
    )


def repeat_text(call, earlier):
    """An exact repeat of a call the reviewer rejected, refused without asking them again."""
    feedback = f'Their feedback then: "{earlier.feedback}".' if earlier.feedback else "They gave no feedback."
    return (
        f"Error: the person reviewing {call.name} already rejected this same call earlier in this conversation, "
        f"so it was refused at once, not sent for review again, and not executed. {feedback} Do not repeat it "
        "or reach the same goal another way; tell the user it was rejected and ask how they want to proceed."
    )


def context_text(items):
    """The client's context[] as the system message the model reads on every turn."""
    return "Context the user's application gives for this conversation:\n" + "\n".join(
        f"- {i['description']}: {i['value']}" for i in items)


def tool_text(msg):
    """A tool result as the model reads it: a frontend tool that failed says so, with its reason."""
    if not msg.error:
        return msg.content
    return f"Error: the tool failed: {msg.error}" + (f"\nWhat it returned: {msg.content}" if msg.content else "")


def user_content(msg, images):
    """A user message with images as OpenAI content parts (inline data as a data: URL); for a model
    that does not take images (AGUI_MODEL_VISION turned off since), its text and a word about them."""
    if not images:
        count = sum(1 for p in msg.parts if p.get("type") == "image")
        return msg.content + f"\n(The person also sent {count} image(s), which you cannot see.)"
    out = []
    for part in msg.parts:
        if part.get("type") == "text":
            out.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image":
            src = part["source"]
            url = src["value"] if src["type"] == "url" else f"data:{src['mimeType']};base64,{src['value']}"
            out.append({"type": "image_url", "image_url": {"url": url}})
    return out


def _diff(before, after):
    """(dotted field, old, new) for every changed field, sorted; objects are walked, a list is one value.

    jsonpatch finds what changed; the model reads fields (`recipient.country`), not list indexes
    or move operations, so each patch path is cut at the first value that is not an object on
    both sides.
    """
    fields = {}
    for op in jsonpatch.make_patch(before, after):
        for pointer in filter(None, (op["path"], op.get("from"))):  # a move changes two fields
            found = _field(jsonpointer.JsonPointer(pointer).parts, before, after)
            if found and found[1] != found[2]:  # 500 -> 500.0 is no change (jsonpatch compares JSON text)
                fields[found[0]] = found[1:]
    return [(".".join(path), old, new) for path, (old, new) in sorted(fields.items())]


def _field(parts, before, after):
    """(path, old, new) of the first field on `parts` that is not an object on both sides."""
    for depth, key in enumerate(parts, 1):
        before, after = before.get(key), after.get(key)
        if not (isinstance(before, dict) and isinstance(after, dict)):
            return tuple(parts[:depth]), before, after
    return None  # objects on both sides: the patch names their changed members


def shown_value(value, prop=None, currency=None):
    """A value as its schema says: a money amount with two decimals and its currency, 500 not 500.0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json.dumps(value, ensure_ascii=False)  # the person's words as written (the model reads them too)
    if (prop or {}).get("type") == "number" and isinstance(currency, str) and currency:
        return f"{value:.2f} {currency}"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def changes_text(before, after, schema=None, by_requester=False):
    """What the person changed before approving, for the model: each field with its old and new value."""
    props = (schema or {}).get("properties") or {}
    changed = []
    for field, old, new in _diff(before, after):
        prop = props.get(field)
        changed.append(f"{field}: {shown_value(old, prop, before.get('currency'))} -> "
                       f"{shown_value(new, prop, after.get('currency'))}")
    who = "The user" if by_requester else "The reviewer"
    return f"{who} changed the arguments before approving (" + "; ".join(changed) + "). " if changed else ""


class Runner:
    def __init__(self, run):
        self.run = run
        self.thread = run.thread
        self.user = self.thread.owner
        self.agent = get_agent(self.thread.agent)
        self.model = get_model()
        self.stream = EventStream(self.thread.id)
        self.state = StateSync(self)  # predictions, commits and reverts of the thread's shared state
        self._cancel_checked = 0.0
        self._text_open = False
        self._reasoning = None  # the open reasoning message's id (a span of the same id around it)
        self._reviewed_elsewhere = set()  # approval ids of this run's calls someone else decides
        # frontend tools' calls are announced once their arguments are whole and pass the gate (a client
        # hands a call it hears END to its tool; Agent Framework fails a response whose client call
        # started and then met RUN_ERROR): {call id: (call, answer's message id)} not announced yet, and
        # the ids of refused ones, which the client never hears of (the next MESSAGES_SNAPSHOT has them)
        self._held, self._unsent = {}, set()
        self._paused = []  # interrupts of calls settle() ran that stopped at a question (tools.Paused)
        self._withdrawn_by_others = False  # settle(): a paused call someone else withdrew (a policy)

    def emit(self, event):
        self.stream.emit(event)

    # --- the run --------------------------------------------------------------------------

    def execute(self):
        with on_behalf_of(self.user):  # every call of this run acts for the thread's owner
            self._execute()

    def _execute(self):
        try:
            if self.agent is None:
                raise ToolError(f"unknown agent {self.thread.agent}")
            continuation = bool(self.run.parent_run_id)
            # the state's read and the decided calls' in one round trip (PostgreSQL)
            reads = state_services.document_reads(self.state.key) + (self.settle_reads() if continuation else [])
            with read_ahead(reads):
                self.state.emit_snapshot()
                settled = self.settle() if continuation else None
            if not self.user.is_active:
                # the owner was switched off (agents/account_off.py): their calls were settled above
                # (withdrawn, or refused at the claim), and nothing more runs as them, the model neither
                self.finish(Run.Status.CANCELLED, RunFinishedCancelledOutcome())
                return
            if continuation:
                if self._paused:  # a call it ran stopped at a question: the run pauses again
                    self.finish(Run.Status.INTERRUPTED, RunFinishedInterruptOutcome(interrupts=self._paused))
                    self.stop_if_asked()
                    return
                # the person withdrew every paused call: nothing to ask the model about them
                withdrawn = bool(settled) and all(s == ToolCall.Status.CANCELLED for s in settled) \
                    and not self._withdrawn_by_others \
                    and not Run.objects.filter(pk=self.run.parent_run_id, error_code="worker_lost").exists()
                # (a lost run's calls were withdrawn by recovery, not the person: the model answers again)
                # every settled call wrote state: the agent's confirmation strategy answers
                reply = None if withdrawn else self.state.confirmation(settled)
                if reply:
                    self.state.say(reply)
                if not self.take_queued_messages():  # text sent with the answers goes to the model
                    if withdrawn:
                        self.finish(Run.Status.CANCELLED, RunFinishedCancelledOutcome())
                        return
                    if reply:
                        self.finish(Run.Status.SUCCEEDED)
                        return
            interrupts, client_calls = self.loop()
            if interrupts:
                self.finish(Run.Status.INTERRUPTED, RunFinishedInterruptOutcome(interrupts=interrupts))
                self.stop_if_asked()
            elif client_calls:
                self.finish(Run.Status.SUCCEEDED, RunFinishedSuccessOutcome(pending_tool_call_ids=client_calls))
            else:
                self.finish(Run.Status.SUCCEEDED)
        except RunCancelled:
            self.finish(Run.Status.CANCELLED, RunFinishedCancelledOutcome())
        except RunLost:
            log.warning("run %s was taken over by recovery; this worker stops without writing", self.run.pk)
        except TurnLimit:
            # it ended `succeeded` without an answer: the person read tool results and nothing after them.
            # A retry runs on the same history, results included: the model goes on from there
            self.fail("turn_limit", _("The agent took %(turns)s steps without finishing its answer, so the run "
                                      "stopped. Retry to let it go on.") % {"turns": settings.AGUI_MAX_TURNS})
        except (StreamUnavailable, redis.ConnectionError, redis.TimeoutError) as exc:
            # Redis stayed down past the retries: nobody can follow this run, so it stops here
            # (what it stored stays) and says so once Redis is back (the beat publishes the end)
            log.error("run %s: %s", self.run.pk, exc)
            self.fail("stream_unavailable", _("The live connection (Redis) was lost for too long, so the run "
                                              "stopped. Retry it."))
        except ModelUnavailable as exc:
            log.warning("run %s: model unavailable: %s", self.run.pk, exc)
            self.fail("model_unavailable", _("The model could not be reached. Try again in a moment."))
        except AnswerCut as exc:
            # it ended `succeeded` mid-sentence, nobody told: a retry runs on the same history, its cut
            # answer included, so the model may go on from it
            log.warning("run %s: %s", self.run.pk, exc)
            self.fail("answer_cut", _("The model's answer reached its length limit and was cut off; nothing it was "
                                      "about to call was run. Retry to let it go on."))
        except NoAnswer as exc:
            # the adapter's sentence (English, a finish reason) is for the logs: the person reads theirs
            log.warning("run %s: %s", self.run.pk, exc)
            self.fail("model_error", _("The model ended its turn without an answer (its provider may have "
                                       "withheld it). Retry, or put your request another way."))
        except BrokenStream as exc:
            log.warning("run %s: %s", self.run.pk, exc)
            self.fail("model_error", _("The model's server sent something that is not an answer, so the run "
                                       "stopped. Try again in a moment."))
        except ModelError as exc:
            said, operators = model_refusal(exc)
            # the provider's own text (its JSON, an API key's tail) is for the operators' logs
            log.log(logging.ERROR if operators else logging.WARNING, "run %s: model error (%s %s): %s",
                    self.run.pk, exc.http_status, exc.code, exc)
            self.fail("model_error", said)
        except Exception:
            log.exception("run %s failed", self.run.pk)
            self.fail("internal_error", _("The run failed unexpectedly; nothing further was executed."))
        finally:
            self.stream.close()

    def take_queued_messages(self):
        """Store what the client sent with its resume (Run.queued_messages of the paused run), after
        the resumed calls' results; True when there was any. Cleared in the same transaction, so a
        run taken over by recovery does not store it twice."""
        # looked at first without the lock: most resumes carry no text, and on SQLite the locking
        # transaction is BEGIN IMMEDIATE (the database's write lock); the messages were committed
        # with the answers, before this continuation existed
        if not selectors.queued_messages(self.run.parent_run_id):
            return False
        with transaction.atomic():
            parent = one(Run.objects.select_for_update().filter(pk=self.run.parent_run_id))
            if parent is None or not parent.queued_messages:
                return False
            rows = [tuple(m) for m in parent.queued_messages]
            taken = set(Message.objects.filter(pk__in=[r[0] for r in rows if r[0]]).values_list("pk", flat=True))
            add_messages(self.thread, [(None if r[0] in taken else r[0], *r[1:]) for r in rows], run=self.run)
            Run.objects.filter(pk=parent.pk).update(queued_messages=[])
        self.emit(MessagesSnapshotEvent(messages=[presenters.agui_message(m)
                                                  for m in presenters.snapshot_window(self.thread.messages.all())]))
        return True

    def finish(self, status, outcome=None):
        self.state.release()
        if isinstance(outcome, RunFinishedInterruptOutcome):  # only what the requester can answer
            shown = [i for i in outcome.interrupts if i.id not in self._reviewed_elsewhere]
            outcome = RunFinishedInterruptOutcome(interrupts=shown) if shown else None
        if not move_run(self.run.pk, status, leaving=[Run.Status.RUNNING], finished_at=timezone.now()):
            return self._lost(status)
        kwargs = {"outcome": outcome} if outcome else {}
        self.end(RunFinishedEvent(thread_id=self.thread.id, run_id=self.run.pk, **kwargs))

    def fail(self, code, message):
        message = jsoncheck.scrub(message)  # it may quote the model's server: a NUL there failed the run's end
        self.state.release()
        if not move_run(self.run.pk, Run.Status.FAILED, leaving=[Run.Status.RUNNING], finished_at=timezone.now(),
                        error=message, error_code=code):
            return self._lost(Run.Status.FAILED)
        if self.run.parent_run_id:
            self.void_unsettled(code)
        self.end(RunErrorEvent(message=message, code=code))

    def void_unsettled(self, code):
        """A continuation that failed before it settled every approved call (Redis away past the
        retries, a database error mid-settle): each one left fails as not executed, and the model is
        told. Left approved, it read as approved for good (inbox, audit, webhooks) with no run to
        execute it, until whichever continuation came next on the thread, days later maybe, ran it then."""
        for tc in _SETTLEABLE.all(self.thread.pk):
            if tc.status != ToolCall.Status.APPROVED:
                continue
            output = (f"Error: {tc.name} was approved, but the run stopped ({code}) before it was executed, so it was "
                      "not executed. Tell the user; do not call it again unless they ask.")
            with transaction.atomic():
                if not move_call(tc.pk, ToolCall.Status.FAILED, leaving=[ToolCall.Status.APPROVED], result=output):
                    continue
                add_message(self.thread, Message.Role.TOOL, output, run=self.run, tool_call_id=tc.pk)
            execution.outcome_recorded(tc.pk, ToolCall.Status.FAILED, tc)
            log.warning("run %s failed (%s) before approved call %s ran: not executed", self.run.pk, code, tc.pk)

    def _lost(self, status):
        """Recovery ended this run while this worker was stuck: its end is already told."""
        log.warning("run %s is no longer running here; not writing it %s", self.run.pk, status)

    def end(self, event):
        """The run's last event. When Redis cannot take it, the run row keeps it and the beat
        (execution.publish_undelivered_ends) appends it once Redis answers: never a silent end."""
        try:
            self.stream.emit(event)
            self.stream.flush()
        except StreamUnavailable:
            Run.objects.filter(pk=self.run.pk).update(undelivered_end=encode(event))

    def loop(self):
        for _turn in range(settings.AGUI_MAX_TURNS):
            self.check_cancelled(force=True)
            self.begin_turn()
            message_id, text, calls = self.stream_model(self.model_messages())
            drop_if_hung_up()  # the server may have ended the connection while the model answered
            with transaction.atomic():
                self.ours()
                assistant = add_message(
                    self.thread, Message.Role.ASSISTANT, text, run=self.run, message_id=message_id,
                    tool_calls=[
                        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                        for c in calls
                    ],
                )
            if not calls:
                return [], []
            most = settings.AGUI_MAX_TOOL_CALLS_PER_ANSWER
            outcomes = [self.handle_call(c, assistant) if i < most else self.one_too_many(c, assistant, most)
                        for i, c in enumerate(calls)]
            interrupts = [o for o in outcomes if isinstance(o, Interrupt)]
            client_calls = [o for o in outcomes if isinstance(o, str)]
            if interrupts or client_calls:
                return interrupts, client_calls
        log.warning("run %s stopped after %s model turns", self.run.pk, settings.AGUI_MAX_TURNS)
        raise TurnLimit()

    def ours(self):
        """RunLost unless the run is still running, so still this worker's. Inside the transaction of
        a write that a run taken over must not make (its answer, a request for a person), with the
        run's row locked so recovery cannot come in between: a worker stuck past its lease (a process
        paused, then woken) found its run declared lost and continued elsewhere, and went on: it
        stored a second answer and filed a second request for the same call, whose approval the next
        continuation on the thread then executed (two transfers for one)."""
        if not Run.objects.select_for_update().filter(pk=self.run.pk, status=Run.Status.RUNNING).exists():
            raise RunLost()

    def begin_turn(self):
        """Before each model turn (a workflow switches agents and opens its step here)."""

    def builtin_call(self, tc, call):
        """A subclass's own tools (a workflow's handoffs, asking the person): an outcome as
        handle_call returns it, or NOT_BUILTIN to treat the call as an agent or client tool."""
        return NOT_BUILTIN

    # --- the model ------------------------------------------------------------------------

    def model_messages(self):
        out = [{"role": "system", "content": self.agent.system_prompt}]
        state, self.state.read_version = state_services.snapshot(self.thread.state_key)
        if state:
            out.append({"role": "system", "content": "Current shared state (JSON):\n" + json.dumps(state)})
        if self.run.context:  # the client's AG-UI context[], kept on the run (and its continuations)
            out.append({"role": "system", "content": context_text(self.run.context)})
        images = llm.takes_images()
        messages = list(self.thread.messages.all())
        # The chat completions API wants each tool result right after the assistant message that
        # called it, and every call answered before the next message: results are placed after
        # their call (a result stored later, e.g. after a person's text, moves up), unanswered
        # calls are left out, and a result whose call is not in the thread is dropped.
        results = {m.tool_call_id: m for m in messages if m.role == Message.Role.TOOL}
        for msg in messages:
            if msg.role == Message.Role.ASSISTANT:
                calls = [c for c in msg.tool_calls or [] if c["id"] in results]
                entry = {"role": "assistant", "content": msg.content or None}
                if calls:
                    entry["tool_calls"] = calls
                if entry["content"] or calls:
                    out.append(entry)
                for call in calls:
                    result = results.pop(call["id"])
                    out.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": tool_text(result)})
            elif msg.role != Message.Role.TOOL:
                out.append({"role": msg.role, "content": user_content(msg, images) if msg.parts else msg.content})
        return out

    def client_tools(self):
        """Frontend tools an AG-UI client offered; the server's own tool of the same name wins (the
        endpoint refuses such a name; an MCP tool may take it later, and a run keeps its tools)."""
        if not self.run.client_tools:  # most runs: no catalog walk per model turn and per call
            return {}
        own = get_agent(self.thread.agent).tool_names()  # a workflow's: every participant's and its own
        return {t["name"]: t for t in self.run.client_tools if t.get("name") not in own}

    def tool_specs(self):
        specs = [t.openai_spec() for t in self.agent.all_tools()]
        for t in self.client_tools().values():
            specs.append({"type": "function", "function": {
                "name": t["name"], "description": t.get("description", ""),
                # an object's schema (agents/agui/incoming.client_tools), whose `type` may be left out
                "parameters": {"type": "object", "properties": {}, **(t.get("parameters") or {})},
            }})
        return specs

    def stream_model(self, messages):
        """Stream one model turn as AG-UI events; returns (message id, text, [tool calls])."""
        message_id = str(uuid.uuid4())
        text, calls = [], {}
        self._text_open = False
        try:
            self._stream_deltas(messages, message_id, text, calls)
        except (RunCancelled, AnswerCut) as exc:  # a Stop, or the model's length limit: the calls are not made
            # A Stop's RUN_FINISHED (cancelled) needs its calls ENDed. A cut answer's stay open under the
            # RUN_ERROR that ends the run: an END declared their cut arguments complete, and the official
            # client then handed its subscribers the call (onNewToolCall, its arguments read as {})
            self._close_open(message_id, self._started(calls) if isinstance(exc, RunCancelled) else {})
            if isinstance(exc, RunCancelled):
                self._said_not_run(self._started(calls))
            if text:  # keep what was already said
                add_message(self.thread, Message.Role.ASSISTANT, "".join(text), run=self.run, message_id=message_id)
            raise
        self._close_open(message_id, self._started(calls))
        for call in calls.values():
            self.state.on_end(call)  # the complete arguments settle the prediction
        return message_id, "".join(text), list(calls.values())

    def _started(self, calls):
        return {k: c for k, c in calls.items() if c["id"] not in self._held}

    def announce(self, call_id):
        """A held frontend tool call, as the client hears it: START, its whole arguments, END."""
        held = self._held.pop(call_id, None)
        if held is None:
            return
        call, message_id = held
        self.emit(ToolCallStartEvent(tool_call_id=call["id"], tool_call_name=call["name"], parent_message_id=message_id))
        if call["arguments"]:
            self.emit(ToolCallArgsEvent(tool_call_id=call["id"], delta=call["arguments"]))
        self.emit(ToolCallEndEvent(tool_call_id=call["id"]))

    def _close_open(self, message_id, calls):
        """END what was started, so the protocol stays balanced."""
        self._end_reasoning()
        if self._text_open:
            self.emit(TextMessageEndEvent(message_id=message_id))
            self._text_open = False
        for call in calls.values():
            self.emit(ToolCallEndEvent(tool_call_id=call["id"]))

    def _said_not_run(self, calls):
        """Each call a Stop ENDed mid-answer (its arguments perhaps cut) is never stored nor run: said
        to the person on its card, which showed its cut arguments as if complete and nothing more."""
        for call in calls.values():
            self.emit(custom_events.tool_outcome({"toolCallId": call["id"], "status": "stopped", "message": _(
                "Not run: you stopped the answer while the assistant was still writing this.")}))

    def stop_if_asked(self):
        """A Stop that came while the calls were being asked for (after the last check) is done as
        Stop does on a paused run: its requests and questions withdrawn, not left to reviewers."""
        if cancel_requested(self.run.pk):
            cancel_run(self.run, self.thread.owner)  # it reads the run again under its lock

    def check_cancelled(self, force=False):
        now = time.monotonic()
        if not force and now - self._cancel_checked < CANCEL_CHECK_SECONDS:
            return
        self._cancel_checked = now
        if cancel_requested(self.run.pk):
            raise RunCancelled()

    def _reason(self, text):
        """Reasoning deltas as REASONING_* events only: shown to the client, never stored as the
        answer nor sent back to the model (a later turn is the model's to reason again)."""
        if not text:
            return
        if self._reasoning is None:
            self._reasoning = str(uuid.uuid4())  # not the answer's id: the client keeps it as its own message
            self.emit(ReasoningStartEvent(message_id=self._reasoning))
            self.emit(ReasoningMessageStartEvent(message_id=self._reasoning, role="reasoning"))
        self.emit(ReasoningMessageContentEvent(message_id=self._reasoning, delta=text))

    def _end_reasoning(self):
        if self._reasoning is not None:
            self.emit(ReasoningMessageEndEvent(message_id=self._reasoning))
            self.emit(ReasoningEndEvent(message_id=self._reasoning))
            self._reasoning = None

    def _stream_deltas(self, messages, message_id, text, calls):
        for delta in self.model.stream(messages, self.tool_specs()):
            self.check_cancelled()
            if isinstance(delta, ReasoningDelta):
                self._reason(delta.text)
                continue
            self._end_reasoning()  # the answer begins: the reasoning before it is complete
            if isinstance(delta, TextDelta):
                if not delta.text:
                    continue
                if not self._text_open:
                    self.emit(TextMessageStartEvent(message_id=message_id, role="assistant"))
                    self._text_open = True
                text.append(delta.text)
                self.emit(TextMessageContentEvent(message_id=message_id, delta=delta.text))
                continue
            call = calls.get(delta.index)
            if call is None:
                if self._text_open:  # the protocol wants the text closed before a tool call opens
                    self.emit(TextMessageEndEvent(message_id=message_id))
                    self._text_open = False
                call = calls[delta.index] = {
                    # a name longer than a row holds is no tool's (theirs are at most 64 characters): cut
                    # to fit, it is told to the model as a tool that does not exist, not an insert that fails
                    "id": self.call_id(delta.id, calls), "name": (delta.name or "")[:NAME_MAX_LENGTH], "arguments": ""
                }
                if call["name"] in self.client_tools():
                    self._held[call["id"]] = (call, message_id)  # announced when whole (Runner.announce)
                else:
                    self.emit(ToolCallStartEvent(tool_call_id=call["id"], tool_call_name=call["name"],
                                                 parent_message_id=message_id))
            if delta.arguments:
                call["arguments"] += delta.arguments
                if call["id"] not in self._held:
                    self.emit(ToolCallArgsEvent(tool_call_id=call["id"], delta=delta.arguments))
                self.state.on_args(call, delta.arguments)

    def call_id(self, wanted, calls):
        """The id a new call is announced and stored under: the model's own, unless it cannot name
        this call alone. A call's id is its row's key across every thread, and servers that number
        their calls (`call_0` each turn) or repeat an id within one answer would otherwise make the
        insert fail and the run with it (so would an id too long, or holding a NUL); the model reads
        the id given here in its history."""
        if (wanted and len(wanted) <= ID_MAX_LENGTH and jsoncheck.scrub(wanted) == wanted  # no NUL: a key PostgreSQL stores
                and all(c["id"] != wanted for c in calls.values())
                and _CALL_TAKEN.one(wanted) is None):
            return wanted
        return f"call_{uuid.uuid4().hex[:24]}"

    # --- tool calls -----------------------------------------------------------------------

    def record_call(self, call, assistant):
        return _TOOL_CALL.create(id=call["id"], thread=self.thread, run=self.run, message=assistant,
                                 name=call["name"], agent=self.agent.name, raw_arguments=call["arguments"])

    def one_too_many(self, call, assistant, most):
        """A call past AGUI_MAX_TOOL_CALLS_PER_ANSWER: recorded and answered, not made. A model (or a
        text it was fed) asking for hundreds of calls at once would otherwise run them all, or file
        as many approval requests into the reviewers' inbox."""
        tc = self.record_call(call, assistant)
        self.never_announced(tc)
        return self.invalid(tc, (
            f"Error: at most {most} tool calls are made from one answer, and this one was past them; nothing "
            "was executed. Make it in a next answer if it is still needed."))

    def never_announced(self, tc):
        """A held frontend call refused: the client never hears of it (nor runs it); the model reads why."""
        if self._held.pop(tc.pk, None):
            self._unsent.add(tc.pk)

    def handle_call(self, call, assistant):
        """Validate, ask policy, then execute, refuse or pause.

        Returns an Interrupt when paused, the call's id when a frontend tool must run it.
        """
        tc = self.record_call(call, assistant)
        builtin = self.builtin_call(tc, call)
        if builtin is not NOT_BUILTIN:
            return builtin
        tool = self.agent.tool(call["name"])
        if tool is None and call["name"] not in self.client_tools():
            return self.invalid(tc, f"Error: there is no tool named {call['name']!r}.")
        try:
            # the gate of input from outside: also what json reads and no database stores (NaN, a NUL,
            # an integer of 5,000 digits, which json fails on with a ValueError that is no JSONDecodeError)
            raw = jsoncheck.loads(call["arguments"] or "{}")
            if tool is None:  # a frontend tool: the client runs it with what it reads of the arguments
                if not isinstance(raw, dict):  # (the official client hands its subscribers {} for what does not parse)
                    raise ArgumentsInvalid({"__root__": ["arguments must be a JSON object"]})
                move_call(tc.pk, ToolCall.Status.CLIENT)
                self.announce(tc.pk)
                return tc.pk
            with translation.override(None):  # what is wrong goes to the model: in the words it reads
                arguments = tool.validate(raw)
        except (json.JSONDecodeError, jsoncheck.Refused, ArgumentsInvalid) as exc:
            if tool is None:
                self.never_announced(tc)
            return self.invalid(tc, arguments_refused(exc))
        tc.arguments = arguments
        tc.save(update_fields=["arguments"])
        try:  # the requester's own objects only, before policy is asked
            objects = tool.authorize(self.user, arguments)
        except ToolError as exc:
            move_call(tc.pk, ToolCall.Status.DENIED)
            self.result(tc, f"Error: {exc}, so {tool.name} was not executed.")
            return None
        verdict = policy.evaluate(tool.name, arguments, {
            "user": self.user, "agent": self.agent.name, "thread": self.thread.id,
            "ask_model": self.self_check(tool),  # mode `model`: approvals cannot import the model itself
        })
        if verdict.action == "auto":
            return self.execute_call(tc, tool, arguments)  # an Interrupt when it stopped at a question
        if verdict.action == "deny":
            move_call(tc.pk, ToolCall.Status.DENIED)
            self.result(tc, f"Error: {tool.name} is blocked by policy ({verdict.matched_rule}) and was not "
                            "executed. Do not retry it or reach the same goal another way.")
            return None
        earlier = self.earlier_rejection(tool, arguments)
        if earlier is not None:  # no circumvention: the reviewers are not asked the same thing twice
            move_call(tc.pk, ToolCall.Status.REPEATED, feedback=earlier.feedback)
            self.result(tc, repeat_text(tc, earlier))
            return None
        most = settings.AGUI_MAX_PENDING_PER_REQUESTER  # as for outside agents: chats in many threads
        if approval_selectors.waiting_count(requester=self.user, limit=most) >= most:  # filed 70 in 2 s
            move_call(tc.pk, ToolCall.Status.DENIED)
            self.result(tc, f"Error: {tool.name} was not sent for review: {most} requests of "
                            f"{self.user.get_username()} are already waiting for a decision, the most one account "
                            "may have. Tell the user; it can be asked again once some are decided.")
            return None
        return self.pause(tc, tool, arguments, verdict, objects)

    def earlier_rejection(self, tool, arguments):
        """A rejection of this same call in this thread that the user has not written since."""
        since = (self.thread.messages.filter(role=Message.Role.USER).order_by("-seq")
                 .values_list("created_at", flat=True).first())
        return approval_selectors.earlier_rejection(tool_name=tool.name, arguments=arguments,
                                                    thread_ref=self.thread.id, since=since)

    def self_check(self, tool):
        """ask_model(tool_name, arguments) for approvals.policy: the JSON-mode self-check (llm.self_check)."""

        def ask(tool_name, arguments):
            task = self.thread.messages.filter(role=Message.Role.USER).order_by("-seq").values_list(
                "content", flat=True).first()
            return llm.self_check(tool_name, arguments, description=tool.description_for(arguments),
                                  risk=tool.risk, reversible=tool.reversible, task=task or "")

        return ask

    def invalid(self, tc, message):
        move_call(tc.pk, ToolCall.Status.INVALID)
        self.result(tc, message)
        return None

    def pause(self, tc, tool, arguments, verdict, objects=()):
        excerpt = conversation_excerpt(self.thread)
        assistant_text = tc.message.content
        with transaction.atomic():
            self.ours()
            request = approval_services.request(
                tool_name=tool.name,
                arguments=arguments,
                schema=tool.schema,
                requester=self.user,
                verdict=verdict,
                description=tool.description_for(arguments),
                reason=assistant_text or "",  # none said: pages show "—", not a sentence in English
                reversible=tool.reversible,
                impact=tool.impact_for(arguments),
                said=said_in_every_language(tool, arguments),
                context={"excerpt": excerpt, **({"objects": list(objects)} if objects else {}),
                         # what the inbox names the thread by (its first words), instead of its id
                         **({"thread_title": self.thread.title} if self.thread.title else {}),
                         **(tool.request_context() if hasattr(tool, "request_context") else {})},  # MCP: its server
                agent_name=self.agent.name,
                thread_ref=self.thread.id,
                run_ref=self.run.pk,
                tool_call_ref=tc.pk,
            )
            move_call(tc.pk, ToolCall.Status.AWAITING_APPROVAL, approval_id=request.pk)
        self.emit(custom_events.approval_request(request, viewer=self.user))
        if not answered_by_requester(request):  # information, not an interrupt (see finish)
            self._reviewed_elsewhere.add(request.pk)
            self.emit(custom_events.approval_status(request))
        return interrupt_for(request)

    def _outcome_unknown(self, tc, detail):
        msg = execution.report_unknown(tc.pk, self.run, jsoncheck.scrub(detail))
        if msg:
            self.emit(ToolCallResultEvent(message_id=msg.pk, tool_call_id=tc.pk, content=msg.content, role="tool"))
            self.state.on_result(tc)

    def execute_call(self, tc, tool, arguments, prefix=""):
        """Exactly once: the conditional claim precedes the side effect. Returns the Interrupt of a
        call that stopped at a question to the person (tools.Paused), else None."""
        # a tool whose effects are rows of this database only: its claim and its own transactions
        # need not wait for the WAL's flush; the result's commit below waits, for them too, before
        # anything leaves (a server crash in between leaves what a worker killed there leaves)
        lazily = lazy_commits if tool.in_database else nullcontext
        with lazily():
            claimed = execution.claim(tc.pk, self.run.pk)  # proposed|approved -> executing, while this run is ours
        if claimed is execution.RUN_LOST:
            raise RunLost()
        if claimed is execution.OWNER_OFF:  # never executed: denied as asked, failed once approved
            output = (f"Error: {self.user.get_username()}'s account is switched off, so {tool.name} was not "
                      "executed for them.")
            if not move_call(tc.pk, ToolCall.Status.DENIED, leaving=[ToolCall.Status.PROPOSED], result=output):
                move_call(tc.pk, ToolCall.Status.FAILED, leaving=[ToolCall.Status.APPROVED], result=output)
            self.result(tc, output)
            return None
        if not claimed:
            log.warning("tool call %s already claimed; not executing it again", tc.pk)
            return
        ctx = ToolContext(user=self.user, thread=self.thread, run=self.run,
                          forwarded_props=self.run.forwarded_props, tool_call_id=tc.pk)
        try:
            self.state.check(tc, arguments)
            tool.authorize(self.user, arguments)  # again: an edit, or an object that changed hands
            with execution.lease(tc.pk), lazily():  # a dead worker's lease lapses: recovery, not repetition
                output, status = str(tool.run(ctx, arguments)), ToolCall.Status.SUCCEEDED
        except ToolError as exc:
            output, status = f"Error: {exc}", ToolCall.Status.FAILED
        except Paused as exc:  # awaiting the person's answer, its worker let go: the run pauses on it
            return exc.interrupt
        except OutcomeUnknown as exc:  # it went out and no answer came: reported, never repeated
            self._outcome_unknown(tc, str(exc))
            return
        except (db.OperationalError, db.InterfaceError) as exc:
            # the connection broke under the tool: its COMMIT may have been made and its answer lost;
            # its records say which (on a new connection), else the outcome is unknown: never `failed`
            log.warning("tool %s: its database connection broke (%s); asking its records", tool.name, exc)
            settled = execution.read_after_lost_connection(tool, tc)
            if settled is None:
                self._outcome_unknown(tc, "its database connection broke while it ran")
                return
            if settled is execution.RUN_AGAIN:  # it certainly did not take effect: once more, on the new connection
                return self.execute_call(tc, tool, arguments, prefix)
            status, output = settled
        except Exception:
            log.exception("tool %s failed", tool.name)
            output, status = f"Error: {tool.name} failed unexpectedly.", ToolCall.Status.FAILED
        # what a tool read (a binary file's NUL bytes, an MCP server's text) is stored as the model's
        # input: a NUL failed the write on PostgreSQL, the run 'unexpectedly', and left the call executing
        output = jsoncheck.scrub(output)
        drop_if_hung_up()  # a tool of another server may have taken long enough for the database to hang up
        # the call's outcome and its message for the model commit together: one commit fewer before
        # the result is sent, and no finished call is left without its result by a worker that died
        with transaction.atomic():
            if not execution.finish(tc.pk, status, output, call=tc, tell=False):
                self.ours()  # taken over while this worker was stuck: its next model turn is not this one's
                return  # recovery already told the model
            msg = add_message(self.thread, Message.Role.TOOL, prefix + output, run=self.run, tool_call_id=tc.pk)
        # the call as finish() just wrote it: result() need not read the row back
        settled = SimpleNamespace(pk=tc.pk, name=tc.name, arguments=tc.arguments,
                                  final_arguments=tc.final_arguments, status=status, result=output)
        try:
            self.result(tc, prefix + output, settled=settled, msg=msg)
        finally:  # the webhooks' outcome (their endpoints read) after the result is on its way, not before
            execution.outcome_recorded(tc.pk, status, tc)

    def result(self, tc, content, settled=None, msg=None):
        """`settled`: the call's fields as they now stand (pk, name, arguments, final_arguments,
        status, result), when the caller has just written them; `msg`: the tool message it stored."""
        msg = msg or add_message(self.thread, Message.Role.TOOL, content, run=self.run, tool_call_id=tc.pk)
        if tc.pk in self._unsent:  # the model reads why; the client never heard of the call
            self.state.on_result(tc)
            return
        self.announce(tc.pk)  # a held call answered here (a workflow's own tool)
        self.emit(ToolCallResultEvent(message_id=msg.pk, tool_call_id=tc.pk, content=content, role="tool"))
        settled = settled or ToolCall.objects.only(
            "pk", "status", "result", "name", "arguments", "final_arguments").get(pk=tc.pk)
        outcome = presenters.tool_outcome(settled, requester_decided=settled.status in (
            ToolCall.Status.REJECTED, ToolCall.Status.RESPONDED) and self.decided_by_requester(tc))
        if outcome:  # the person's sentence; the model keeps `content`
            self.emit(custom_events.tool_outcome(outcome))
        self.state.on_result(tc)

    def decided_by_requester(self, tc):
        """The person who asked decided on their own call (not a reviewer)."""
        return ApprovalRequest.objects.filter(tool_call_ref=tc.pk, decided_by=self.user).exists()

    def settle_reads(self):
        """settle()'s first read as (read, values), for queries.read_ahead."""
        return [(_SETTLEABLE, (self.thread.pk,))]

    def settle(self):
        """A continuation first settles every decided call: execute it, or tell the model why not."""
        settled = []
        calls = list(_SETTLEABLE.all(self.thread.pk))
        # a request withdrawn by someone else than the person (a policy now blocking the call): the
        # model hears why and answers; the person did not stop anything
        others = self.withdrawn_by_others([tc.approval_id for tc in calls if tc.status == ToolCall.Status.CANCELLED])
        self._withdrawn_by_others = bool(others)
        for tc in calls:
            tool = self.agent.tool(tc.name)
            settled.append(tc.status)
            if tc.status == ToolCall.Status.APPROVED and tool:
                final = tc.final_arguments if tc.final_arguments is not None else tc.arguments
                blocked = self.blocked_now(tool, final)
                if blocked:
                    self.not_executed(tc, blocked)
                    continue
                # who edited is asked only when someone did (changes_text says nothing otherwise)
                paused = self.execute_call(tc, tool, final, prefix=changes_text(
                    tc.arguments, final, tool.schema, by_requester=final != tc.arguments and self.decided_by_requester(tc)))
                if paused is not None:
                    self._paused.append(paused)
            elif tc.status == ToolCall.Status.APPROVED:  # approved, and its tool is gone meanwhile
                self.not_executed(tc, f"Error: {tc.name} was approved, but it is no longer available (its server "
                                      "stopped offering it), so it was not executed.")
            elif tc.status == ToolCall.Status.REJECTED:
                self.result(tc, rejection_text(tc))
            elif tc.status == ToolCall.Status.RESPONDED:
                self.result(tc, guidance_text(tc))
            elif tc.status == ToolCall.Status.EXPIRED:
                self.result(tc, f"Error: nobody approved {tc.name} before its deadline (timed out), so it was not "
                                "executed. Do not try to reach the same goal another way unless the user asks.")
            elif tc.approval_id in others and tc.feedback:
                self.result(tc, f"Error: {tc.name} was cancelled and not executed: {tc.feedback}")
            else:
                self.result(tc, f"{tc.name} was cancelled and not executed.")
        return settled

    def withdrawn_by_others(self, approval_ids):
        """Of these cancelled requests, the ids of those someone other than the chat's owner withdrew."""
        if not approval_ids:
            return set()
        return {str(pk) for pk in ApprovalRequest.objects.filter(pk__in=approval_ids).exclude(
            decided_by_id=self.thread.owner_id).values_list("pk", flat=True)}


    def blocked_now(self, tool, arguments):
        """Why the policy in force blocks an approved call as it now stands, else None. A decision
        approves a call under the policy of its moment; between it and the execution the policy may
        have become a deny (a tool switched off mid-incident, a rule added) or the requester's facts
        that a rule reads may have changed (a group such as "frozen"), and a sibling call's decision
        or a busy worker can hold an approved call for hours. Only a refusal counts here: who decides
        and how many were settled by the decision. Mode `model` is not asked again (no model given)."""
        verdict = policy.evaluate(tool.name, arguments, {"user": self.user, "agent": self.agent.name,
                                                         "thread": self.thread.id}, grants=False)
        if verdict.action != "deny":
            return None
        log.info("approved call of %s not executed: the policy now blocks it (%s)", tool.name, verdict.matched_rule)
        return "Error: " + BLOCKED_NOW()  # a sentence people read in their language too (presenters)

    def not_executed(self, tc, output):
        """An approved call that will not run (its tool is no longer offered, as when its MCP server
        stopped listing it; or the policy now blocks it): approved -> failed, never executed, and said
        so. Left approved, it read as approved for good (inbox, audit, webhooks) while the model was
        told it had been cancelled."""
        with transaction.atomic():
            if not move_call(tc.pk, ToolCall.Status.FAILED, leaving=[ToolCall.Status.APPROVED], result=output):
                return
            msg = add_message(self.thread, Message.Role.TOOL, output, run=self.run, tool_call_id=tc.pk)
        settled = SimpleNamespace(pk=tc.pk, name=tc.name, arguments=tc.arguments, final_arguments=tc.final_arguments,
                                  status=ToolCall.Status.FAILED, result=output)
        try:
            self.result(tc, output, settled=settled, msg=msg)
        finally:
            execution.outcome_recorded(tc.pk, ToolCall.Status.FAILED, tc)


def interrupt_for(request):
    """The AG-UI interrupt of a paused call; its responseSchema offers only what the tool's policy
    allows (request.allowed_decisions): `decision` one of those, or the older `approved` boolean."""
    allowed = [d for d in ("approve", "edit", "reject", "respond") if request.allows(d)]
    approved = [v for v, kinds in ((True, ("approve", "edit")), (False, ("reject",))) if set(kinds) & set(allowed)]
    properties = {"decision": {"type": "string", "enum": allowed}}
    if approved:
        properties["approved"] = {"type": "boolean", **({"const": approved[0]} if len(approved) == 1 else {})}
    if "edit" in allowed:
        properties["arguments"] = request.schema or {"type": "object"}
    properties["feedback"] = {"type": "string", "maxLength": FEEDBACK_MAX, **(
        {"description": "Required to respond: guidance the agent reads instead of running the call"}
        if "respond" in allowed else {})}
    required = [{"required": ["decision"]}] + ([{"required": ["approved"]}] if approved else [])
    if request.approver_kind == ApproverKind.REQUESTER and "approve" in allowed:  # the requester's own confirmation may become a grant
        properties["alwaysAllowInThread"] = {
            "type": "boolean", "description": "Approve, and let this tool run without asking again in this thread"}
    return Interrupt(
        id=request.pk,
        reason="tool_call",
        message=request.description,
        tool_call_id=request.tool_call_ref,
        response_schema={"type": "object", "properties": properties, "anyOf": required},
        expires_at=request.expires_at.isoformat() if request.expires_at else None,
        metadata={
            "toolName": request.tool_name,
            "risk": request.risk,
            "reversible": request.reversible,
            "impact": request.impact,
            "approver": presenters.approver(request),
        },
    )
