"""What of a RunAgentInput's `messages` a thread takes: the new user messages and client-tool results.

AG-UI clients send their whole history on every run (DESIGN.md "Beyond our own agents"), some
with the ids they were given, some (Agent Framework's AGUIChatClient) with new ids every turn.
The stored thread is the truth: a message it holds, by id or as part of a resent history, is
not stored again; what is new is bounded (one request must not hold the database for seconds);
a tool result is taken only for a frontend tool call this thread is waiting on.
"""

from dataclasses import dataclass

from django.conf import settings

from agents.models import Message, ToolCall

ROLES = (Message.Role.USER, Message.Role.TOOL)


@dataclass
class Refused(Exception):
    """What the endpoint answers in-stream as RUN_ERROR `code`."""

    code: str
    message: str


def max_new_messages():
    return getattr(settings, "AGUI_MAX_NEW_MESSAGES", 200)  # settings.py: env AGUI_MAX_NEW_MESSAGES


def _text(message):
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(getattr(part, "text", "") for part in (content or []))


def select(thread, agent_input):
    """[(id, role, content, tool_call_id)] to store, in order; raises Refused.

    `thread` is None for a thread this request creates (it holds nothing yet).
    """
    sent = [(m.id, m.role, _text(m), getattr(m, "tool_call_id", "") or "")
            for m in agent_input.messages if m.role in ROLES]
    held = list(thread.messages.filter(role__in=ROLES).values_list("id", "role", "content", "tool_call_id")) \
        if thread is not None else []
    held_ids = {h[0] for h in held}
    # The person's turns decide what is new: a client that resends the whole conversation (whatever
    # its ids, with or without the tool results it saw) starts with the turns the thread holds;
    # only the ones after them are new. Tool results are sorted out by _tool_results. A resent
    # history with no new turn ends in something else (Agent Framework answering an interrupt ends
    # in our call); a lone turn repeating the only held one ("yes") is new.
    sent_turns = [s[2] for s in sent if s[1] == Message.Role.USER]
    held_turns = [h[2] for h in held if h[1] == Message.Role.USER]
    ends_in_turn = bool(agent_input.messages) and agent_input.messages[-1].role == Message.Role.USER
    resent = (len(held_turns) > 0 and sent_turns[:len(held_turns)] == held_turns
              and (len(sent_turns) > len(held_turns) or not ends_in_turn))
    skip, new = len(held_turns) if resent else 0, []
    for s in sent:
        if s[1] == Message.Role.USER and skip:
            skip -= 1
        elif s[0] not in held_ids:
            new.append(s)
    limit = max_new_messages()
    if len(new) > limit:
        raise Refused("too_many_messages",
                      f"This request adds {len(new)} messages the chat does not have yet; at most {limit} may be "
                      "added at once. Send the conversation in smaller parts.")
    # Message ids are global, but clients number their messages per thread ("1", "2", ...): a new
    # message whose id another thread holds is stored under an id of the server's own, not dropped
    elsewhere = set(Message.objects.filter(pk__in=[s[0] for s in new]).values_list("pk", flat=True))
    new = [(None, *s[1:]) if s[0] in elsewhere else s for s in new]
    return _tool_results(thread, new)


def _tool_results(thread, new):
    """Keep a tool result only for a frontend call the thread waits on; a resent one is dropped."""
    call_ids = {s[3] for s in new if s[1] == Message.Role.TOOL}
    if not call_ids:
        return new
    waiting, answered = set(), set()
    if thread is not None:
        waiting = set(ToolCall.objects.filter(thread=thread, pk__in=call_ids, status=ToolCall.Status.CLIENT)
                      .values_list("pk", flat=True))
        answered = set(thread.messages.filter(role=Message.Role.TOOL, tool_call_id__in=call_ids)
                       .values_list("tool_call_id", flat=True))
    unknown = sorted(call_ids - waiting - answered)
    if unknown:
        raise Refused("unknown_tool_call",
                      "A tool result was sent for a tool call this chat is not waiting on (" + ", ".join(unknown)
                      + "); only the results of the chat's own pending client-side tool calls are accepted.")
    out, taken = [], set()
    for s in new:
        if s[1] == Message.Role.TOOL:
            if s[3] in answered or s[3] in taken:
                continue  # its result is already in the chat (or earlier in this request)
            taken.add(s[3])
        out.append(s)
    return out
