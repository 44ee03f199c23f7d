"""The AG-UI endpoint: POST /agui/<agent>/ answers a RunAgentInput with Server-Sent Events.

The run itself happens in a Celery worker; this view only records the input (new messages,
or resume answers) into a Plan, then streams relay.py's relay of the thread's Redis Stream from
this run's RUN_STARTED to its RUN_FINISHED / RUN_ERROR. A new message's RUN_STARTED goes out before
its writes (early_start). A client that goes away mid-run abandons the run: it is stopped after a
grace when nobody else watches the thread, or at once by a new message (agents/watching.py).
"""

import asyncio
import contextlib
import logging
from dataclasses import dataclass, replace

import pydantic
from ag_ui.core import (
    PROTOCOL_VERSION,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
)
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import transaction
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication

from agents import dispatch, presenters, selectors, services, thread_ids, watching
from agents.agui import blank_ids, custom_events, incoming, replay
from agents.agui.capabilities import capabilities
from agents.agui.relay import (
    HAND_OVER_LATEST,
    Plan,
    closed_on_error,
    frame,
    hand_over,
    hand_over_later,
    released,
    watched_relay,
)
from agents.catalog import get_agent, load_agents
from agents.models import InputRequest
from agents.runtime import events, inputs, statesync
from agents.views import agent_cards
from agui_project import jsoncheck
from agui_project.auth import (
    BearerTokenAuthentication,
    ExpiringTokenAuthentication,
    TokenRefused,
    header_reads,
)
from agui_project.limits import json_text
from agui_project.queries import read_ahead
from agui_project.redis_client import unreachable
from approvals import argument_errors
from approvals.models import ApprovalRequest
from state.services import StateError
from state.services import document as state_doc

log = logging.getLogger(__name__)

MAX_THREAD_ID = 200
TOKEN_SCHEMES = (BearerTokenAuthentication(), ExpiringTokenAuthentication())
SESSION = SessionAuthentication()


def error(status, message, **extra):
    return JsonResponse({"message": message, **extra}, status=status)


def unauthenticated(message, code, **extra):
    """401, with the challenge RFC 9110 requires of one and the code the REST API answers with."""
    response = error(401, message, code=code, **extra)
    response["WWW-Authenticate"] = "Bearer"
    return response


def authenticate(request):
    """(user, None) or (None, error response): a token header, else the session (with CSRF).

    The REST API's own DRF classes (settings' REST_FRAMEWORK), asked directly because this view
    streams asynchronously, which an APIView cannot. They are handed the Django request: a DRF
    Request would parse (and so consume) the body for the CSRF check's form field.
    """
    try:
        if request.headers.get("Authorization", ""):
            for scheme in TOKEN_SCHEMES:  # expired and revoked tokens are refused here too
                found = scheme.authenticate(request)
                if found is not None:
                    return found[0], None
            return None, unauthenticated(_("unsupported Authorization header; use Bearer <token> or Token <token>"),
                                         "not_authenticated")
        user = request.user
        if not user.is_authenticated:
            return None, unauthenticated(_("authentication required"), "not_authenticated")
        SESSION.enforce_csrf(request)  # a session is a browser: the usual CSRF rules apply
        return user, None
    except exceptions.AuthenticationFailed as exc:
        return None, unauthenticated(str(exc.detail), "invalid_token",
                                     **({"reason": exc.reason} if isinstance(exc, TokenRefused) else {}))
    except exceptions.PermissionDenied:
        return None, error(403, _("CSRF check failed"))


def parse_input(body):
    """RunAgentInput from the body, or (None, the error response): 400 for a body that is not a
    JSON object (malformed: README "AG-UI"), 422 naming the fields for one that is not a
    RunAgentInput (what pydantic-based AG-UI servers answer, FastAPI's among them)."""
    try:
        data = jsoncheck.loads(body or b"")  # the middleware's gate: depth, NUL, lone surrogates
    except jsoncheck.Refused as exc:
        return None, error(400, **exc.refusal.payload())
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        return None, error(400, _("the body is not JSON"), code="malformed_body", errors={"body": [_("not valid JSON")]})
    if not isinstance(data, dict):
        return None, error(400, _("the body must be a JSON object"), code="malformed_body",
                           errors={"body": [_("not an object")]})
    if "forwarded_props" in data and "forwardedProps" not in data:
        data["forwardedProps"] = data.pop("forwarded_props")
    for key, empty in (("messages", []), ("tools", []), ("context", []), ("state", {})):
        if data.get(key) is None:  # null is left out: SDKs that serialise every field send it
            data[key] = empty
    try:
        agent_input = RunAgentInput.model_validate(data)
    except pydantic.ValidationError as exc:
        # in the caller's language, as our APIs' are; each field by its place in the body
        errors = argument_errors.from_pydantic(exc, root="body", data=data)
        return None, error(422, _("invalid RunAgentInput"), code="invalid_input", errors=errors)
    bad = blank_ids.blank(agent_input)
    length = _("must be 1 to %(max)s characters") % {"max": MAX_THREAD_ID}
    for field, value in (("threadId", agent_input.thread_id), ("runId", agent_input.run_id)):
        if field in bad:
            continue  # blank: said once
        if len(value) > MAX_THREAD_ID:
            bad[field] = [length]
        elif thread_ids.unaddressable(value):
            bad[field] = [thread_ids.unaddressable(value)]
    if bad:
        return None, error(422, _("invalid RunAgentInput"), code="invalid_input", errors=bad)
    return agent_input, None


def _answers(thread, resume):
    """The resume entries that answer something, or None when the input has no resume at all.

    A `cancelled` entry for an interrupt that has already closed (expired, or decided in the
    inbox) is dropped: the official client insists that every interrupt it saw is answered, and
    cancelling is its way past one that can no longer be answered. With a new message the run goes
    on as a new turn; with none, the client hears what became of them (settled()). Answering a
    closed interrupt (`resolved`) still gets already_decided / expired.
    """
    if resume is None:
        return None
    cancels = [r.interrupt_id for r in resume if r.status == "cancelled"]
    closed = set(
        ApprovalRequest.objects.filter(pk__in=cancels, thread_ref=thread.pk)
        .exclude(status=ApprovalRequest.Status.PENDING).values_list("pk", flat=True)
    ) | set(
        InputRequest.objects.filter(pk__in=cancels, thread=thread)
        .exclude(status=InputRequest.Status.PENDING).values_list("pk", flat=True)
    ) if cancels else set()
    return [r for r in resume if not (r.status == "cancelled" and r.interrupt_id in closed)]


def refuse(agent_input, code, message, before=()):
    """A refusal after the request is authenticated and well-formed: in-stream, as RUN_STARTED +
    RUN_ERROR with a code, because that is what every client shows (Microsoft Agent Framework's
    turns any HTTP error into an unreadable ResponseNotRead). HTTP 4xx stay for what comes
    before: 401, 413 (body size), 415, a malformed body. `before`: events the client needs first
    (the current state when its state was refused)."""
    return Plan(thread_id=agent_input.thread_id, run_id=agent_input.run_id,
                error=RunErrorEvent(code=code, message=message), after_start=list(before))


def _state_refusal(thread, agent_input, code, message):
    """A refused state as RUN_ERROR: its message alone, which names the place (state/services.py;
    `errors` repeat it for the REST API's fields, and RUN_ERROR has no field for them), after the
    state as it is now and its version, whatever the refusal: a stock client sends its last state on
    every run, so without them it sent the refused one again and every later turn was refused too
    (a new thread's: the empty state it starts from)."""
    doc = state_doc(thread.state_key)
    return refuse(agent_input, code, message, [StateSnapshotEvent(snapshot=doc.view),
                                               custom_events.state_version(doc.version, doc.provisional)])


def accept_state(thread, user, agent_input):
    """RunAgentInput.state: the person's changes to the shared state. Returns (refusal Plan or
    None, events for the run's stream: what to say when the state was not applied).

    The base version travels in `forwardedProps.stateVersion` (the `version` of the last CUSTOM
    `state_version` event the client saw); stock clients send none (statesync.apply_client_state
    tells their echoes from their edits). A change must match the agent's state schema.
    """
    props = agent_input.forwarded_props if isinstance(agent_input.forwarded_props, dict) else {}
    base = props.get("stateVersion")
    if base is not None and (not isinstance(base, int) or isinstance(base, bool) or base < 0):
        return _state_refusal(thread, agent_input, "state_invalid", _(
            "The state version this request starts from (forwardedProps.stateVersion) must be a whole number, 0 or "
            "more.")), []
    try:
        outcome = statesync.apply_client_state(thread, user, agent_input.state, base)
    except StateError as exc:
        payload = statesync.error_payload(exc)
        return _state_refusal(thread, agent_input, payload["code"], payload["message"]), []
    if isinstance(outcome, statesync.NotApplied):  # the run goes on with the server's state, and says so
        doc = state_doc(thread.state_key)
        return None, [StateSnapshotEvent(snapshot=doc.view), custom_events.state_not_applied(
            outcome.code, outcome.message, doc.version)]
    return None, []


def agent_and_user(request, agent_name):
    """(agent, user, None), or (.., .., the error response): 401 for a caller not signed in, whatever
    the name (a 404 first told anyone which agents exist), then 404 for an unknown agent, listing the
    agents as GET /agui/ does."""
    agent = get_agent(agent_name)
    user, denied = authenticate(request)
    if denied is not None:
        return agent, user, denied
    if agent is None:
        return None, None, error(404, _("unknown agent %(agent)s") % {"agent": repr(agent_name)},
                                 agents=sorted(load_agents()))
    return agent, user, None


RUN_METHODS = ("GET", "HEAD", "POST", "OPTIONS")
INDEX_METHODS = ("GET", "HEAD", "OPTIONS")


def allowed(request, methods, refusal):
    """The answer to a method other than GET and POST: OPTIONS -> 204 naming the methods, any
    other but HEAD -> 405 with them (RFC 9110 asks for `Allow` on both); None for GET, HEAD, POST.
    No CORS: a cross-origin preflight gets no Access-Control-Allow-* header, so browsers on other
    sites are kept out, as the thread sockets keep them out (README "Security")."""
    if request.method in ("GET", "HEAD", "POST") and request.method in methods:
        return None
    if request.method == "OPTIONS":
        response = HttpResponse(status=204)
    else:
        response = error(405, refusal, code="method_not_allowed")
    response["Allow"] = ", ".join(methods)
    return response


def without_body(request, response):
    """HEAD is answered as GET, without the body (its length still said)."""
    if request.method == "HEAD" and not response.streaming:
        response["Content-Length"] = str(len(response.content))
        response.content = b""
    return response


@dataclass
class Accepted:
    """A POST that passed check(): authenticated, well-formed, what of its history is new; nothing
    written yet (record() does that)."""
    agent: object
    user: object
    agent_input: RunAgentInput
    thread: object  # None: a new thread
    new_messages: list
    run_context: list
    ignored: list

    @property
    def starts_run(self):
        """Whether record() starts a run of the client's runId (new messages, or a new thread),
        rather than answering interrupts or catching up on a thread's runs."""
        return self.agent_input.resume is None and (self.thread is None or bool(self.new_messages))


def check(request, agent_name):
    """prepare's reads: an error response, a refusal (Plan), or the Accepted POST."""
    with checking(request, agent_name) as checked:
        return checked


@contextlib.contextmanager
def checking(request, agent_name):
    """check()'s answer, the POST's reads by key read together (first_reads) for the block: what
    record() then reads of a resume is among them."""
    parsed = parse_body(request)
    with read_ahead(first_reads(request, parsed[1])):
        yield _check(request, agent_name, *parsed)


def parse_body(request):
    """(whether the body is JSON, the RunAgentInput or None, the error response or None). Parsed
    before the caller is known, so that the POST's reads by key can go together (first_reads); its
    errors still come after the agent's and the caller's, in the caller's language (_check)."""
    json_body = request.content_type == "application/json"  # what the body checks (middleware, jsoncheck) read
    return (json_body, *parse_input(json_text(request, request.body))) if json_body else (False, None, None)


def first_reads(request, agent_input):
    """The POST's reads by key, as (read, values), read together (queries.read_ahead): the bearer's
    token, and for a well-formed input its thread and its run id; what the thread holds when the
    input goes on a thread (a resume, or a history resent: a lone message most often starts one,
    which holds nothing to read); what a resume answers."""
    reads = header_reads(request)
    if agent_input is not None:
        reads += selectors.thread_reads(agent_input.thread_id, agent_input.run_id)
        if agent_input.resume is not None or len(agent_input.messages) > 1:
            reads += incoming.held_reads(agent_input.thread_id)
        if agent_input.resume:
            reads += services.resume_reads(agent_input.thread_id, [r.interrupt_id for r in agent_input.resume])
    return reads


def _check(request, agent_name, json_body, agent_input, invalid):
    agent, user, denied = agent_and_user(request, agent_name)
    if denied:
        return denied
    if not json_body:
        return error(415, _("send the RunAgentInput as JSON (Content-Type: application/json)"),
                     code="unsupported_media_type")
    if invalid:  # said again now that the caller's language is known (their token chose it)
        return parse_input(json_text(request, request.body))[1]
    down = unreachable()
    if down is not None:  # every answer below needs Redis (its stream, the worker's broker): refused unwritten
        log.warning("AG-UI POST of %s refused: Redis unreachable (%s)", user, down)
        return refuse(agent_input, "service_unavailable", _(
            "The service is temporarily unavailable, so nothing was stored. Try again in a moment."))
    thread = selectors.thread_by_id(agent_input.thread_id)
    if thread and thread.owner_id != user.pk:
        # said as for an id a deleted chat had (record(): ThreadIdTaken): "belongs to someone else"
        # told any caller which ids name somebody's live chat
        taken = thread_ids.ThreadIdTaken(agent_input.thread_id)
        return refuse(agent_input, taken.code, taken.message)
    if thread and thread.agent != agent.name:
        return refuse(agent_input, "agent_mismatch", _("thread %(thread)s belongs to agent %(agent)s") % {
            "thread": thread.pk, "agent": repr(thread.agent)})
    if selectors.run_exists(agent_input.run_id):
        return refuse(agent_input, "run_exists", _("run %(id)s already exists") % {"id": agent_input.run_id})
    try:  # what of the client's history is new, before anything is written (agents/agui/incoming.py)
        held = incoming.held(thread)
        new_messages = incoming.select(thread, agent_input, held)
        run_context, ignored = incoming.context(agent_input), incoming.ignored(thread, agent_input, held)
        incoming.client_tools(agent_input, agent)
    except incoming.Refused as exc:
        return refuse(agent_input, exc.code, exc.message)
    return Accepted(agent, user, agent_input, thread, new_messages, run_context, ignored)


def record(accepted, defer=False, join=True, sent=None):
    """prepare's writes: a Plan. `defer`: a new message's run is handed to a worker by the relay,
    after its RUN_STARTED (Plan.deferred). `join`: the watcher joins here, with the run (else the
    relay joins it as it starts). `sent`: the RUN_STARTED (encoded) the client already has."""
    agent_input = accepted.agent_input
    sent_by_run = {agent_input.run_id: sent} if sent else None
    try:
        with dispatch.announced(defer=defer and agent_input.resume is None, sent=sent_by_run) as heads:
            # a new thread is made in its first run's transaction: one commit, and its row is not
            # read again under a lock (no one else can see it before the commit)
            with transaction.atomic() if accepted.thread is None else contextlib.nullcontext():
                plan = begin(accepted.agent, accepted.user, agent_input, accepted.thread,
                             incoming.own_ids(accepted.new_messages), accepted.run_context, accepted.ignored)
    except thread_ids.ThreadIdTaken as exc:  # a deleted chat's id is never handed out again
        raced = _made_meanwhile(accepted)
        if isinstance(raced, Accepted):
            return record(raced, defer=defer, join=join, sent=sent)
        return raced or refuse(agent_input, exc.code, exc.message)
    if isinstance(plan, Plan) and not plan.error and plan.run_id in heads:
        # the run this POST announced: its RUN_STARTED goes out as written, and the watcher joins
        # here, in one round trip of the process's client (agents/agui/relay.py)
        plan.head = heads[plan.run_id]
        if join:
            plan.watch = watching.Watch(plan.thread_id, plan.run_id)
            plan.watch.join_sync()
        plan.deferred, heads.deferred = heads.deferred, []
    dispatch.hand_over_each(heads.deferred)  # none the relay carries: now
    return plan


def _made_meanwhile(accepted):
    """A new thread's id found taken by the writes though check() found no thread: when another
    POST of the caller's own made it meanwhile (two tabs, a client sending its first message
    again), this POST is one more on that thread (an Accepted on it: start_run refuses it while
    that POST's run is active), or a refusal of it. None when the id is not the caller's chat."""
    agent_input = accepted.agent_input
    thread = selectors.thread_by_id(agent_input.thread_id)
    if thread is None or thread.owner_id != accepted.user.pk or thread.agent != accepted.agent.name:
        return None
    try:
        held = incoming.held(thread)
        new_messages = incoming.select(thread, agent_input, held)
        ignored = incoming.ignored(thread, agent_input, held)
    except incoming.Refused as exc:
        return refuse(agent_input, exc.code, exc.message)
    if not new_messages:  # the other POST stored these very messages: its run answers them
        return refuse(agent_input, "run_active", _("the agent is still answering; wait for it or stop it"))
    return replace(accepted, thread=thread, new_messages=new_messages, ignored=ignored)


def prepare(request, agent_name):
    """Everything before the stream (sync: ORM), on one thread hop (under an ASGI server each costs
    ~0.3 ms): check(), then record(). Returns a Plan or an error response; for a new run under an
    ASGI server, the Accepted POST unwritten, its RUN_STARTED to go out before its writes
    (run_endpoint)."""
    with checking(request, agent_name) as checked:
        if not isinstance(checked, Accepted):
            return checked
        asgi = isinstance(request, ASGIRequest)
        return checked if checked.starts_run and asgi else record(checked, defer=asgi)


def begin(agent, user, agent_input, thread, new_messages, run_context, ignored):
    """prepare's writes: the new thread (`thread` None; in the caller's transaction), the state
    sent, then the resume or the new run. Returns a Plan or an error response."""
    new_thread = thread is None
    if new_thread:
        thread = services.create_thread(user, agent.name, thread_id=agent_input.thread_id)
        refused, state_notice = accept_state(thread, user, agent_input)
        if refused:  # a refused state leaves no new thread behind
            transaction.set_rollback(True)
            return refused
    elif agent_input.state not in (None, {}):
        with transaction.atomic():
            refused, state_notice = accept_state(thread, user, agent_input)
            if refused:
                transaction.set_rollback(True)
    else:  # no state sent: nothing is written, so no transaction (on SQLite it takes the write lock)
        refused, state_notice = accept_state(thread, user, agent_input)
    if refused:
        return refused
    # a new thread's stream starts empty (the relay skips to this run's RUN_STARTED regardless)
    position = "0-0" if new_thread else events.last_id_sync(thread.pk)
    plan = Plan(thread_id=thread.pk, run_id=agent_input.run_id, position=position, after_start=state_notice)
    resume = _answers(thread, agent_input.resume)
    plan.review_wait = settings.AGUI_SSE_REVIEW_WAIT_SECONDS  # a run paused on a group's review is followed
    if resume is None and not new_messages and not new_thread:
        caught = catch_up(thread, agent_input, position)
        if caught:
            return caught
    if agent_input.resume and not resume and not new_messages:
        return settled(thread, user, agent_input, position)
    try:
        run = None
        if resume or (resume is not None and not new_thread and awaits_answer(thread)):
            entries = [(r.interrupt_id, r.status, r.payload) for r in resume]
            answered, question_ids = services.apply_resume(
                thread, user, entries, agent_input.run_id, messages=new_messages)
            # the answers' continuation, made and announced on this thread, is not looked up again
            if not dispatch.announced_here(agent_input.run_id) and not selectors.run_exists(agent_input.run_id):
                acknowledgement = acknowledged(thread, user, agent_input, entries, position)
                if acknowledgement:
                    return acknowledgement
                if not selectors.run_exists(agent_input.run_id):
                    recorded = _("Your answer is recorded; the request still needs other approvers.")
                    if new_messages:
                        recorded += " " + _("Your message will be answered once it is decided.")
                    plan.error = RunErrorEvent(code="awaiting_other_approvers", message=recorded)
                    return plan
            # what was answered, as the answers left it (only the kinds that were answered)
            plan.after_start += [custom_events.approval_response(r, viewer=user) for r in answered] + [
                custom_events.request_info_response(inputs.payload(q))
                for q in (InputRequest.objects.filter(pk__in=question_ids, thread=thread) if question_ids else ())
            ]
        else:
            run = services.start_run(
                thread, user, run_id=agent_input.run_id, messages=new_messages,
                new_thread=new_thread,
                forwarded_props=agent_input.forwarded_props if isinstance(agent_input.forwarded_props, dict) else {},
                client_tools=incoming.client_tools(agent_input, agent),
                context=run_context, ignored=ignored,
            )
            if ignored:  # never silently: the client hears what of its history the model does not get
                plan.after_start.append(custom_events.ignored_messages(ignored))
    except services.ResumeError as exc:
        if new_thread:  # an answer to nothing on a chat this POST would make: no empty chat left behind
            transaction.set_rollback(True)
        plan.error = RunErrorEvent(code=exc.code, message=exc.message)
        return plan
    except services.RunConflict as exc:
        if new_thread:  # a refused first run (too_many_runs) leaves no new thread behind
            transaction.set_rollback(True)
        # an AG-UI client resumes by interrupt id: the ids follow the person's sentence
        ids = " " + _("(waiting: %(ids)s)") % {"ids": ", ".join(str(r.pk) for r in exc.pending)} if exc.pending else ""
        plan.error = RunErrorEvent(code=exc.code, message=exc.message + ids)
        return plan
    # a new thread holds just the messages this run stored (start_run returns them)
    stored = run.new_messages if new_thread and run is not None else selectors.thread_messages(thread.pk)
    if run is None:
        # a resume: its continuation was published as the answers committed, and a quick worker has
        # stored some of what it streams by now; the client gets those from the stream, not twice (a
        # snapshot's message the stream then sends again doubled in the official client)
        stored = [m for m in stored if m.run_id != agent_input.run_id]
    messages = [presenters.agui_message(m) for m in presenters.snapshot_window(stored)]
    if messages:
        plan.after_start.insert(0, MessagesSnapshotEvent(messages=messages))
    return plan


def awaits_answer(thread):
    """Whether an empty `resume: []` misses an answer: something on the thread waits for the
    requester's own client (a group's review does not). Asked only for an empty resume: a
    non-empty one is checked answer by answer (services.apply_resume), and a thread made just
    now waits for nothing."""
    return any(services.answered_by_requester(r) for r in services.pending_approvals(thread)) \
        or bool(inputs.pending(thread))


def describe(request, agent_name):
    """GET /agui/<agent>: the agent's AgentCapabilities (agents/agui/capabilities.py)."""
    agent, _user, denied = agent_and_user(request, agent_name)
    if denied:
        return denied
    card = next(c for c in agent_cards() if c["name"] == agent.name)
    return JsonResponse(capabilities(agent, card).model_dump(mode="json", by_alias=True, exclude_none=True))


def acknowledged(thread, user, agent_input, entries, position):
    """The requester answered what was hers, and someone else (a group) still decides another call
    of the run: the answers are acknowledged as a run of the client's runId (no Run row: RUN_STARTED,
    approval_response of each, approval_status of what still waits, RUN_FINISHED), then the response
    follows that review into the continuation, which gets an id of its own. None when the run
    does not wait on a review (another approver of the same request: awaiting_other_approvers)."""
    paused = services.release_resume_id(thread, agent_input.run_id)
    if not paused or selectors.run_exists(agent_input.run_id) or not replay.awaits_review(paused):
        return None  # (a continuation that took the client's id meanwhile is relayed as usual by the caller)
    head = RunStartedEvent(thread_id=thread.pk, run_id=agent_input.run_id, protocol_version=PROTOCOL_VERSION)
    answered = _outcomes(thread, user, [e[0] for e in entries])
    waiting = [custom_events.approval_status(r) for r in ApprovalRequest.objects.filter(
        run_ref=paused, status=ApprovalRequest.Status.PENDING).select_related("approver_group").order_by("created_at")
        if not services.answered_by_requester(r)]
    end = RunFinishedEvent(thread_id=thread.pk, run_id=agent_input.run_id)
    return Plan(thread_id=thread.pk, replayed=[head, *answered, *waiting, end], parent_run_id=paused,
                position=position, review_wait=settings.AGUI_SSE_REVIEW_WAIT_SECONDS)


def settled(thread, user, agent_input, position):
    """A resume whose every entry cancels an interrupt already closed, with no new message: nothing
    is left to answer, and the model is not asked again (a turn on the conversation as it stands
    repeats its last call, and under an "always allow" grant runs it once more). The client hears
    what became of them: the runs it has not seen (catch_up), else a run of its runId with no Run
    row (RUN_STARTED, the outcome of each, RUN_FINISHED). Either ends with a RUN_FINISHED that
    clears the interrupts it holds."""
    caught = catch_up(thread, agent_input, position)
    if caught:
        return caught
    head = RunStartedEvent(thread_id=thread.pk, run_id=agent_input.run_id, protocol_version=PROTOCOL_VERSION)
    outcomes = _outcomes(thread, user, [r.interrupt_id for r in agent_input.resume])
    end = RunFinishedEvent(thread_id=thread.pk, run_id=agent_input.run_id)
    return Plan(thread_id=thread.pk, replayed=[head, *outcomes, end], position=position)


def _outcomes(thread, user, ids):
    """approval_response / request_info_response of each of the thread's interrupts named that is
    no longer pending."""
    closed = ApprovalRequest.objects.filter(pk__in=ids, thread_ref=thread.pk).exclude(
        status=ApprovalRequest.Status.PENDING).select_related("approver_group", "decided_by")
    return [custom_events.approval_response(r, viewer=user) for r in closed] + [
        custom_events.request_info_response(inputs.payload(q))
        for q in InputRequest.objects.filter(pk__in=ids, thread=thread).exclude(status=InputRequest.Status.PENDING)]


def catch_up(thread, agent_input, position):
    """A plain POST (no new message, no resume) on a thread with runs its client has not seen, or
    one still waiting on someone else's review: those runs (replay.catch_up), then what is live.
    It is not a new turn: the client's runId names no run. None when there is nothing to show
    (the POST then starts a run, as before). `position`: read before the database, so that a run
    announced meanwhile is read from the stream."""
    caught = replay.catch_up(thread, {m.id for m in agent_input.messages if getattr(m, "id", None)})
    if caught is None:
        return None
    plan = Plan(thread_id=thread.pk, replayed=caught["replayed"], parent_run_id=caught["follow"],
                position=position, review_wait=settings.AGUI_SSE_REVIEW_WAIT_SECONDS)
    live = caught["live"]
    if live:  # relayed from its RUN_STARTED (still in the stream), or from now when not announced yet
        plan.run_id, plan.position = live.pk, events.before(live.stream_id) if live.stream_id else position
        plan.after_start = [] if caught["replayed"] else replay.continuation_head(live.pk)
    return plan


@csrf_exempt  # token clients carry no cookie; session callers are CSRF-checked in authenticate()
async def run_endpoint(request, agent_name):
    other = allowed(request, RUN_METHODS, _("POST a RunAgentInput, or GET what the agent accepts"))
    if other is not None:
        return other
    if request.method in ("GET", "HEAD"):
        return without_body(request, await sync_to_async(describe)(request, agent_name))
    checked = await sync_to_async(released(prepare))(request, agent_name)  # the stream holds no connection
    if isinstance(checked, JsonResponse):
        return checked
    # under an ASGI server a new run's RUN_STARTED goes out before its writes (early_start); a sync
    # caller (the test client) may never read the stream, so it gets the stream once all is written
    # and its run is handed to a worker at once
    if isinstance(checked, Accepted):
        # the writes are made whatever becomes of the response, once its RUN_STARTED is on its way
        started = events.encode(RunStartedEvent(thread_id=checked.agent_input.thread_id,
                                                run_id=checked.agent_input.run_id, protocol_version=PROTOCOL_VERSION))
        first_sent = asyncio.Event()
        recording = asyncio.ensure_future(record_after(first_sent, checked, started))
        recording.add_done_callback(_recorded)
        body = early_start(checked, started, recording, first_sent)
    else:
        plan = checked
        if plan.deferred:  # a response that never starts (the client already gone) still hands it over
            hand_over_later(plan)
        body = watched_relay(plan)
    ids = ((checked.agent_input.thread_id, checked.agent_input.run_id) if isinstance(checked, Accepted)
           else (checked.thread_id, checked.run_id or checked.parent_run_id))
    body = closed_on_error(body, *ids)
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def early_start(accepted, started, recording, first_sent):
    """The run's RUN_STARTED (`started`, encoded), then, once its writes (`recording`: record_after())
    are done, the relay. `first_sent` is set once the server has the RUN_STARTED: the writes begin.

    RUN_STARTED says a run of the client's runId has begun and names nothing that the writes
    decide (a new message's run has no parent run): it is what the client would get first either
    way, so it is not kept waiting for them (about two thirds of a POST's time). What the writes
    refuse comes after it as RUN_ERROR, as every refusal does. The stream gets the same event."""
    agent_input = accepted.agent_input
    relayed = False
    try:
        yield frame(started)
        # on the loop's next turn, after the server's own write of the frame to the socket
        asyncio.get_running_loop().call_soon(first_sent.set)
        try:
            plan = await asyncio.shield(recording)
        except Exception:  # logged by _recorded; the client hears it in-stream, after its RUN_STARTED
            plan = Plan(thread_id=agent_input.thread_id, run_id=agent_input.run_id, error=RunErrorEvent(
                code="internal_error", message=_("The server could not start this run. Look at the chat before "
                                                 "sending the message again: it may have been stored.")))
        plan.start_sent = relayed = True
    finally:
        first_sent.set()  # closed at its first frame: the writes go on all the same
        if not relayed:  # the client went before the relay began: once made, its run is handed over, abandoned
            recording.add_done_callback(_orphaned)
    if plan.deferred and not plan.after_start:  # nothing of the writes to send first (no messages)
        await hand_over(plan)
    async for chunk in watched_relay(plan):
        yield chunk


_orphans = set()  # strong references to the tasks below (the loop keeps only weak ones)


def _orphaned(recording):
    """For a run whose client went between its RUN_STARTED and the end of its writes, what the
    relay would have done: hand the run to a worker, and leave as a relay's client going mid-run
    leaves (the run abandoned: watching.Watch.leave)."""
    if recording.cancelled() or recording.exception() is not None:
        return
    plan = recording.result()
    if plan.error or not plan.run_id:
        return

    async def orphaned():
        try:
            await hand_over(plan)
        finally:
            await watching.Watch(plan.thread_id, plan.run_id).leave(abandoned=True)

    task = asyncio.ensure_future(orphaned())
    _orphans.add(task)
    task.add_done_callback(_orphans.discard)


async def record_after(first_sent, accepted, started):
    """record_alone() once `first_sent` is set. Not beside the RUN_STARTED: the writes' thread
    would hold the GIL while the loop sends that frame. For a response that never starts (its
    client gone before it: its generator never runs), after HAND_OVER_LATEST, and its run is
    handed over at once then: nothing will send the conversation first."""
    try:
        await asyncio.wait_for(first_sent.wait(), HAND_OVER_LATEST)
    except TimeoutError:
        plan = await sync_to_async(record_alone, thread_sensitive=False)(accepted, started)
        await hand_over(plan)
        return plan
    return await sync_to_async(record_alone, thread_sensitive=False)(accepted, started)


def record_alone(accepted, sent):
    """record() for early_start, on a thread of no request, so that it ends as it began even when
    the response does not (the client gone: the message is stored and its run goes on, as when a
    client goes after the POST); its connections are closed (returned to the pool) after. The
    relay joins the watcher as it starts, and hands the run to a worker once it has sent what
    the writes add (the conversation): the worker it wakes does not compete with that frame."""
    return released(record)(accepted, defer=True, join=False, sent=sent)


def _recorded(task):
    if task.cancelled():
        return
    if task.exception() is not None:
        log.error("AG-UI POST: the run's writes failed after its RUN_STARTED", exc_info=task.exception())
    elif task.result().deferred:  # a response that never starts (the client already gone) still hands it over
        hand_over_later(task.result())


@csrf_exempt  # only GET and HEAD are answered; anything else is a 405, not a CSRF page
def index(request):
    """GET /agui/: the agents, their tools with approval modes, and state schemas."""
    other = allowed(request, INDEX_METHODS, _("GET the list of agents"))
    if other is not None:
        return other
    user, denied = authenticate(request)
    if denied:
        return denied
    schemas = {a.name: a.state_schema for a in load_agents().values()}
    return without_body(request, JsonResponse(
        {"agents": [{**card, "stateSchema": schemas.get(card["name"])} for card in agent_cards()]}))
