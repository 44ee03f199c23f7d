"""The names a RunAgentInput gives things, none of them empty or only spaces.

AG-UI's models take any string: a message with id "" was stored under an id of ours, and every
sentence naming it read "Message  holds ..."; a tool result answering toolCallId "" or an interrupt
"" can name nothing; a thread or run id of spaces made a chat whose address is blank. Each is a
field of the input, refused with the rest of the input's fields (endpoint.parse_input: 422,
invalid_input, the place in the body named as pydantic's places are)."""

from django.utils.translation import gettext as _


def _named(agent_input):
    """(place in the body, the name there) of each name the input gives; None: not given."""
    yield "threadId", agent_input.thread_id
    yield "runId", agent_input.run_id
    yield "parentRunId", agent_input.parent_run_id
    for i, m in enumerate(agent_input.messages or []):
        yield f"messages.{i}.id", m.id
        yield f"messages.{i}.toolCallId", getattr(m, "tool_call_id", None)
        for j, call in enumerate(getattr(m, "tool_calls", None) or []):
            yield f"messages.{i}.toolCalls.{j}.id", call.id
            yield f"messages.{i}.toolCalls.{j}.function.name", call.function.name
    for i, tool in enumerate(agent_input.tools or []):
        yield f"tools.{i}.name", tool.name
    for i, entry in enumerate(agent_input.resume or []):
        yield f"resume.{i}.interruptId", entry.interrupt_id


def blank(agent_input):
    """{place: [sentence]} for each name that is empty or only white space."""
    said = _("must not be empty or only spaces")
    return {place: [said] for place, value in _named(agent_input)
            if isinstance(value, str) and not value.strip()}
