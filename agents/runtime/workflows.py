"""Multi-agent handoff workflows on top of the runner.

A `Workflow` (defined in agents/catalog/workflow.py) is a graph of agents: participants, handoff
edges, a start agent and a termination condition over the conversation. It registers in the
catalog like an agent (its tools are the union of its participants'), so `GET /agui/`, the
chat's picker and `POST /agui/<name>/` know it; this module registers `WorkflowRunner` as the
loop of every Workflow (agents/registry.py), so `runner.run_agent` runs their threads with it.

Each thread gets its own `WorkflowInstance` row (active agent, path of handoffs, each agent's
working state, status), so a workflow survives interrupts, continuations and worker restarts.
Within a run, each agent's stretch of turns is one AG-UI step (STEP_STARTED / STEP_FINISHED,
stepName = the agent's name, always closed before RUN_FINISHED); CUSTOM `status` carries the
workflow's state, `workflow_output` the agents' intermediate and final outputs, `request_info`
a question for the person.

Built-in tools the model sees next to the active agent's own:
- `handoff_to_<agent>` for each allowed edge; the target takes over on the next turn.
- `request_info(message, response_schema?)`: pauses the run with an `input_required`
  interrupt (agents/runtime/inputs.py); the answer comes back as this call's result.
A continuation (after a decision or an answer) starts in the agent that paused, at the same
step, with a system summary of the task, the completed steps and the context, and the
instruction not to repeat them; completed tool calls are never replayed (they are settled,
executed-once rows).
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager

import jsonschema
from ag_ui.core import StepFinishedEvent, StepStartedEvent
from django.db import transaction
from django.utils import timezone

from agents import registry
from agents.agui import custom_events
from agents.catalog.workflow import (
    HANDOFF_PREFIX,
    REQUEST_INFO,
    Handoff,
    Workflow,
    ends_with_case_complete,
    merged_state,
)
from agents.models import InputRequest, Message, Run, ToolCall, WorkflowInstance
from agents.runtime import inputs
from agents.runtime.runner import NOT_BUILTIN, RunCancelled, Runner
from agents.transitions import move_call
from agui_project import jsoncheck

__all__ = ["Handoff", "Workflow", "WorkflowRunner", "ends_with_case_complete", "merged_state"]

log = logging.getLogger(__name__)

SUMMARY_STEPS = 40  # completed steps listed in a resume summary
DONE_STATUSES = (
    ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED, ToolCall.Status.REJECTED, ToolCall.Status.EXPIRED,
    ToolCall.Status.CANCELLED, ToolCall.Status.DENIED, ToolCall.Status.OUTCOME_UNKNOWN,
    ToolCall.Status.RESPONDED, ToolCall.Status.REPEATED,
)
HANDOFF_ARGS = {
    "type": "object",
    "properties": {"summary": {"type": "string", "maxLength": 2000,
                               "description": "What the next agent needs to know"}},
    "additionalProperties": False,
}
REQUEST_INFO_ARGS = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1, "maxLength": 2000,
                    "description": "The question, as the person will read it"},
        "response_schema": {"type": "object",
                            "description": 'JSON Schema of the answer (default {"type": "string"})'},
    },
    "required": ["message"],
    "additionalProperties": False,
}


def handoff_spec(edge):
    return {"type": "function", "function": {
        "name": HANDOFF_PREFIX + edge.target,
        "description": f"Hand the conversation over to {edge.target}. {edge.description}".strip(),
        "parameters": HANDOFF_ARGS,
    }}


REQUEST_INFO_SPEC = {"type": "function", "function": {
    "name": REQUEST_INFO,
    "description": "Ask the person for information you need and cannot look up. The workflow pauses "
                   "until they answer; their answer is this tool's result.",
    "parameters": REQUEST_INFO_ARGS,
}}


def _args(raw, schema):
    """Parsed and checked built-in tool arguments, or an error text for the model."""
    try:
        value = jsoncheck.loads(raw or "{}")  # as a tool's arguments are read (runner.handle_call)
    except json.JSONDecodeError as exc:
        return None, f"Error: the arguments are not valid JSON ({exc.msg}); nothing was done."
    except jsoncheck.Refused as exc:
        return None, f"Error: the arguments are not usable JSON ({exc.refusal.message}); nothing was done."
    problems = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(value)]
    if problems:
        return None, f"Error: invalid arguments ({'; '.join(problems)}); nothing was done."
    return value, None


class WorkflowRunner(Runner):
    """The runner loop with one participant active at a time (self.agent), switched by handoffs."""

    def __init__(self, run):
        super().__init__(run)
        self.workflow = self.agent  # self.agent becomes the active participant in execute()
        self.instance = None
        self.resuming = False
        self._step = None  # the open step's name
        self._handoff = None  # the target chosen this turn; it takes over on the next turn
        self._ended_by_person = False
        self._terminated = False
        self._status_sent = None

    # --- the run --------------------------------------------------------------------------

    def execute(self):
        try:
            self.instance = self.load_instance()
            self.agent = self.workflow.participant(self.instance.active_agent)
            # a continuation, or a run re-executed after its worker died, resumes from saved state
            self.resuming = bool(self.run.parent_run_id) or self.run.messages.exclude(role=Message.Role.USER).exists()
        except Exception:
            log.exception("run %s: could not load its workflow", self.run.pk)
            self.fail("internal_error", "The workflow could not be loaded; nothing was executed.")
            self.stream.close()
            return
        super().execute()

    def load_instance(self):
        start = self.workflow.start
        with transaction.atomic():
            instance, created = WorkflowInstance.objects.select_for_update().get_or_create(
                thread=self.thread, defaults={"workflow": self.workflow.name, "active_agent": start},
            )
            new_case = not created and not self.run.parent_run_id and (
                instance.status in WorkflowInstance.FINISHED or self.workflow.participant(instance.active_agent) is None
            )
            if new_case:  # the last case ended: this request starts the next one from the start agent
                first = self.run.messages.filter(role=Message.Role.USER).order_by("seq").first()
                instance.case += 1
                instance.case_started_seq = (first.seq - 1) if first else self.thread.message_seq
                instance.active_agent, instance.path, instance.agent_state = start, [], {}
                instance.task = instance.output = ""
            if not instance.task:
                first = (self.thread.messages.filter(role=Message.Role.USER, seq__gt=instance.case_started_seq)
                         .order_by("seq").first())
                instance.task = first.content if first else ""
            if not instance.path:
                instance.path = [{"agent": start, "runId": self.run.pk, "at": timezone.now().isoformat()}]
            instance.status = WorkflowInstance.Status.IN_PROGRESS
            instance.save()
        return instance

    def save_instance(self, **changes):
        for key, value in changes.items():
            setattr(self.instance, key, value)
        WorkflowInstance.objects.filter(pk=self.instance.pk).update(
            status=self.instance.status, active_agent=self.instance.active_agent, path=self.instance.path,
            agent_state=self.instance.agent_state, output=self.instance.output, updated_at=timezone.now(),
        )

    def working_state(self, name=None):
        return self.instance.agent_state.setdefault(name or self.agent.name, {
            "turns": 0, "toolCalls": [], "lastOutput": "", "status": "active",
        })

    def emit_status(self, state):
        if state != self._status_sent:
            self._status_sent = state
            self.emit(custom_events.workflow_status(state))

    def open_step(self):
        if self._step is None:
            self.emit_status(WorkflowInstance.Status.IN_PROGRESS)
            self._step = self.agent.name
            self.working_state()["status"] = "active"
            self.emit(StepStartedEvent(step_name=self._step))

    def close_step(self):
        if self._step is not None:
            self.emit(StepFinishedEvent(step_name=self._step))
            self._step = None

    def finish(self, status, outcome=None):
        self.close_step()
        if self.instance is not None:
            if status == Run.Status.CANCELLED or self._ended_by_person:
                state = WorkflowInstance.Status.CANCELLED
            elif status == Run.Status.INTERRUPTED:
                state = WorkflowInstance.Status.PENDING_REQUESTS
            elif self._terminated:
                state = WorkflowInstance.Status.COMPLETED
            else:
                state = WorkflowInstance.Status.IDLE
            self.working_state()["status"] = {
                WorkflowInstance.Status.PENDING_REQUESTS: "waiting", WorkflowInstance.Status.IDLE: "waiting",
            }.get(state, state)
            self.save_instance(status=state)
            if state == WorkflowInstance.Status.COMPLETED:
                self.emit(custom_events.workflow_output({
                    "type": "output", "agent": self.agent.name, "text": self.instance.output,
                }))
            self.emit_status(state)
        super().finish(status, outcome)

    def fail(self, code, message):
        self.close_step()
        if self.instance is not None:
            self.save_instance(status=WorkflowInstance.Status.FAILED)
            self.emit_status(WorkflowInstance.Status.FAILED)
        super().fail(code, message)

    # --- turns ----------------------------------------------------------------------------

    def begin_turn(self):
        if self._ended_by_person:
            raise RunCancelled()  # the person cancelled a question: the workflow ends here
        if self._handoff:
            self.close_step()
            self.agent = self.workflow.participant(self._handoff)
            self._handoff = None
        self.open_step()

    def tool_specs(self):
        specs = super().tool_specs()
        specs += [handoff_spec(edge) for edge in self.workflow.targets(self.agent.name)]
        specs.append(REQUEST_INFO_SPEC)
        return specs

    def model_messages(self):
        out = super().model_messages()
        if self.resuming:
            out.insert(1, {"role": "system", "content": self.summary()})
        return out

    def stream_model(self, messages):
        message_id, text, calls = super().stream_model(messages)
        work = self.working_state()
        work["turns"] += 1
        if text:
            work["lastOutput"] = text[-2000:]
        if not calls and self.workflow.terminate(self.case_conversation(text)):
            self._terminated = True
            self.instance.output = text
        elif text:
            self.emit(custom_events.workflow_output({
                "type": "intermediate", "agent": self.agent.name, "text": text,
            }))
        self.save_instance()
        return message_id, text, calls

    def case_conversation(self, reply):
        rows = (self.thread.messages.filter(seq__gt=self.instance.case_started_seq)
                .exclude(role=Message.Role.TOOL).values("role", "content"))
        return [*rows, {"role": "assistant", "content": reply}]  # the reply is stored after this turn

    def handle_call(self, call, assistant):
        outcome = super().handle_call(call, assistant)
        self.working_state()["toolCalls"].append(call["id"])
        return outcome

    # --- built-in tools -------------------------------------------------------------------

    def builtin_call(self, tc, call):
        name = call["name"]
        if name.startswith(HANDOFF_PREFIX) and not self.agent.tool(name):
            return self.handoff(tc, name[len(HANDOFF_PREFIX):], call["arguments"])
        if name == REQUEST_INFO and not self.agent.tool(name):
            return self.request_info(tc, call["arguments"])
        return NOT_BUILTIN

    def handoff(self, tc, target, raw):
        args, problem = _args(raw, HANDOFF_ARGS)
        if problem:
            return self.invalid(tc, problem)
        allowed = [e.target for e in self.workflow.targets(self.agent.name)]
        if target not in allowed:
            return self.invalid(tc, f"Error: {self.agent.name} cannot hand off to {target}; "
                                    f"it may hand off to: {', '.join(allowed) or 'nobody'}.")
        if self._handoff:
            return self.invalid(tc, f"Error: this turn already handed off to {self._handoff}; one handoff per turn.")
        source = self.agent.name
        with transaction.atomic():
            move_call(tc.pk, ToolCall.Status.SUCCEEDED, arguments=args, result=f"Handed off to {target}.")
            self.working_state(source)["status"] = "handed_off"
            self.instance.path.append({"agent": target, "from": source, "toolCallId": tc.pk, "runId": self.run.pk,
                                       "at": timezone.now().isoformat(), **({"summary": args["summary"]}
                                                                           if args.get("summary") else {})})
            self.save_instance(active_agent=target)
        self._handoff = target
        self.result(tc, f"Handed off to {target}.")
        return None

    def request_info(self, tc, raw):
        args, problem = _args(raw, REQUEST_INFO_ARGS)
        if problem:
            return self.invalid(tc, problem)
        try:
            schema = inputs.check_schema(args.get("response_schema") or inputs.DEFAULT_SCHEMA)
        except inputs.InputError as exc:
            return self.invalid(tc, f"Error: {exc.message}; nothing was asked.")
        ToolCall.objects.filter(pk=tc.pk).update(arguments=args)
        request = inputs.create(thread=self.thread, run=self.run, tool_call=tc, agent=self.agent.name,
                                message=args["message"], response_schema=schema)
        self.emit(custom_events.request_info(inputs.payload(request)))
        return inputs.interrupt_for(request)

    # --- continuing -----------------------------------------------------------------------

    def settle_reads(self):
        return []  # the answers' results come first: the decided calls are read after them

    def settle(self):
        """Answers first (they are results, not executions), then the base settle of decided calls."""
        self.open_step()
        settled = []
        answered = Message.objects.filter(thread=self.thread, role=Message.Role.TOOL).values("tool_call_id")
        # not a tool's own question that paused its call (ToolCall.resume): that call runs on (base settle)
        for request in (InputRequest.objects.filter(thread=self.thread, tool_call__resume__isnull=True)
                        .exclude(status=InputRequest.Status.PENDING)
                        .exclude(tool_call_id__in=answered).order_by("created_at")):
            self.result(request.tool_call, inputs.answer_text(request))
            if request.status == InputRequest.Status.CANCELLED:
                self._ended_by_person = True
                settled.append(ToolCall.Status.CANCELLED)
            else:
                settled.append(ToolCall.Status.SUCCEEDED)
        with self.any_participant_tool():
            settled += super().settle()
        return settled

    @contextmanager
    def any_participant_tool(self):
        """A paused call may belong to the agent that handed off in the same turn: look tools up workflow-wide."""
        active = self.agent
        self.agent = _SettleView(active, self.workflow)
        try:
            yield
        finally:
            self.agent = active

    def summary(self):
        """Seed 003's resume context: task, completed steps, context; and not to repeat them."""
        owner = {}
        for name, work in self.instance.agent_state.items():
            for call_id in work.get("toolCalls", []):
                owner[call_id] = name
        done = (ToolCall.objects.filter(thread=self.thread, status__in=DONE_STATUSES,
                                        message__seq__gt=self.instance.case_started_seq).order_by("created_at"))
        lines = []
        for i, tc in enumerate(done, 1):  # a long case keeps its latest steps (the conversation has the rest)
            args = json.dumps(tc.final_arguments if tc.final_arguments is not None else tc.arguments or {})
            lines.append(f"{i}. {owner.get(tc.pk, 'an agent')}: {tc.name}({args}) -> {tc.status}")
        if len(lines) > SUMMARY_STEPS:
            lines = [f"(… {len(lines) - SUMMARY_STEPS} earlier steps)"] + lines[-SUMMARY_STEPS:]
        path = " -> ".join(p["agent"] for p in self.instance.path)
        return (
            f"You are resuming the {self.workflow.name} workflow from its saved state.\n"
            f"Task: {self.instance.task or '(none given)'}\n"
            f"Path so far: {path} (active: {self.agent.name}).\n"
            "Completed steps:\n" + ("\n".join(lines) or "(none yet)") + "\n"
            f"Context: you are {self.agent.name}; the results of the completed steps are in the conversation.\n"
            "Continue from where the workflow paused. Do not repeat completed steps and do not call a tool "
            "again whose result is already in the conversation."
        )


registry.register_loop(Workflow, WorkflowRunner)  # runner.run_agent runs a workflow's threads with it


class _SettleView:
    """The active agent, with tool lookup falling back to every participant's tools."""

    def __init__(self, active, workflow):
        self._active, self._workflow = active, workflow

    def tool(self, name):
        return self._active.tool(name) or self._workflow.tool(name)

    def __getattr__(self, name):
        return getattr(self._active, name)
