"""What of a RunAgentInput a thread takes: new user messages (text and images), client-tool results
(with their errors), and the context[] the model is given; what it does not take is told.

AG-UI clients send their whole history on every run (DESIGN.md "Beyond our own agents"), some
with the ids they were given, some (Agent Framework's AGUIChatClient) with new ids every turn.
The stored thread is the truth: a message it holds, by id or as part of a resent history, is
not stored again; what is new is bounded (one request must not hold the database for seconds);
a tool result is taken only for a frontend tool call this thread is waiting on. The agent's
instructions are the server's: a client's system and developer messages, and assistant messages
the thread does not hold, are not given to the model, and the run says so (`ignored`).
"""

import binascii
import hashlib
import json
import re
from dataclasses import dataclass

import jsonschema
from django.conf import settings
from django.utils.translation import gettext as _

from agents.llm import takes_images
from agents.models import Message, Run, ToolCall
from agui_project.queries import Prepared

ROLES = (Message.Role.USER, Message.Role.TOOL)
# the thread's person and tool messages, in order: read on every POST to a thread, compiled once
_HELD = Prepared(Message, lambda thread_id: Message.objects.filter(thread_id=thread_id, role__in=ROLES).values_list(
    "id", "role", "content", "tool_call_id"))
MESSAGE_ID_MAX = Message._meta.pk.max_length
NOT_TAKEN = ("system", "developer", "assistant")  # told in-stream when not part of the thread
# "reasoning" and "activity" messages are the client's record of what a stream showed, never
# conversation the model reads: ignored without a word (the client resends them every turn)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # what OpenAI's vision models read
MAX_IMAGE_URL = 2048


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
    return " ".join(getattr(part, "text", "") for part in (content or []) if getattr(part, "type", "") == "text")


def _parts(message):
    """The content parts in wire form when there is more than text (else None: `content` says it all)."""
    content = message.content
    if isinstance(content, str) or all(getattr(p, "type", "") == "text" for p in content or []):
        return None
    return [p.model_dump(mode="json", by_alias=True) for p in content]


def _row(m):
    """(id, role, text, tool_call_id, parts, error): what agents.messages.add_messages stores."""
    if m.role != Message.Role.TOOL:  # unknown fields are kept by ag_ui.core: read a tool's own only on tools
        return (m.id, m.role, _text(m), "", _parts(m), "")
    return (m.id, m.role, _text(m), m.tool_call_id, _parts(m), m.error or "")


def context(agent_input):
    """RunAgentInput.context as [{description, value}] for the run (Run.context, given to the model
    on every turn of it and its continuations); Refused past AGUI_MAX_CONTEXT_CHARS."""
    items = [{"description": c.description, "value": c.value} for c in agent_input.context or []]
    size, limit = sum(len(i["description"]) + len(i["value"]) for i in items), settings.AGUI_MAX_CONTEXT_CHARS
    if size > limit:
        raise Refused("context_too_large",
                      _("The request's context holds %(size)s characters; at most %(limit)s are accepted. "
                        "Send less context.") % {"size": size, "limit": limit})
    return items


# what chat-completions APIs take as a function's name (OpenAI's pattern and length)
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_TOOLS = 128  # the model's API (OpenAI's) refuses a request offering more


def client_tools(agent_input, agent):
    """RunAgentInput.tools as the run keeps them (Run.client_tools), or Refused: a tool the model's
    API refuses (a name outside its pattern, two of one name, parameters that are not an object's
    schema) failed every run of the thread with the API's 400, after the message was stored; one
    named as a tool of the agent's own was never offered (theirs was, in its place, or beside it)."""
    tools, names = [t.model_dump(mode="json", exclude_none=True) for t in agent_input.tools or []], set()
    own = agent.tool_names() if tools else set()
    for t in tools:
        name, parameters = t.get("name"), t.get("parameters")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name) or name in names:
            raise Refused("invalid_tools", _(
                "The tool %(name)s cannot be offered to the model: a tool's name is 1 to 64 letters, digits, "
                "_ or -, and each tool has a name of its own. Nothing was stored.") % {"name": repr(name)[:80]})
        if name in own:
            raise Refused("invalid_tools", _(
                "The tool %(name)s cannot be offered to the model: the agent has a tool of its own by that name. "
                "Give yours another name. Nothing was stored.") % {"name": repr(name)})
        if parameters is not None and not (isinstance(parameters, dict) and parameters.get("type", "object") == "object"):
            raise Refused("invalid_tools", _(
                "The tool %(name)s cannot be offered to the model: its parameters must be a JSON Schema of an "
                "object. Nothing was stored.") % {"name": repr(name)})
        if parameters:
            try:  # by the draft it names ($schema), else the latest, as the model's API checks it
                jsonschema.validators.validator_for(parameters).check_schema(parameters)
            except jsonschema.SchemaError as exc:
                raise Refused("invalid_tools", _(
                    "The tool %(name)s cannot be offered to the model: its parameters are not a valid JSON Schema "
                    "(at %(place)s). Nothing was stored.") % {
                        "name": repr(name), "place": "/" + "/".join(str(p) for p in exc.path)}) from None
        names.add(name)
    if tools and len(tools) + len(own) > MAX_TOOLS:
        raise Refused("invalid_tools", _(
            "The model can be offered at most %(max)s tools, and the agent has %(own)s of its own: send at most "
            "%(left)s. Nothing was stored.") % {"max": MAX_TOOLS, "own": len(own), "left": max(MAX_TOOLS - len(own), 0)})
    return tools


def held_reads(thread_id):
    """select()'s read of what the thread holds, as (read, values), for queries.read_ahead."""
    return [(_HELD, (thread_id,))]


def held(thread):
    """What the thread holds of the roles a client sends, for select() and ignored() (read once)."""
    return _HELD.all(thread.pk) if thread is not None else []


def select(thread, agent_input, held):
    """[(id, role, content, tool_call_id, parts, error)] to store, in order (own_ids() then says
    under which ids); raises Refused.

    `thread` is None for a thread this request creates (it holds nothing yet); `held`: held(thread).
    """
    sent = [_row(m) for m in agent_input.messages if m.role in ROLES]
    # a message is held under its id only in its own role: a new turn sent under the id of a tool
    # result the thread holds was dropped without a word and the model answered nothing new; it is
    # new, as one under an assistant message's id is (own_ids stores it under an id of ours)
    held_ids = {(h[0], h[1]) for h in held}
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
    has_history = any(m.role == "assistant" for m in agent_input.messages)
    skip = len(held_turns) if resent else max(_window(sent_turns, held_turns, has_history, ends_in_turn),
                                               _common_start(sent_turns, held_turns, has_history, ends_in_turn))
    new = []
    for s in sent:
        if s[1] == Message.Role.USER and skip:
            skip -= 1
        elif (s[0], s[1]) not in held_ids:
            new.append(s)
    seen = set()
    for s in new:  # one id, two messages: which one the id names is a guess, and the second store would fail
        if s[0] and s[0] in seen:
            raise Refused("duplicate_message_id",
                          _("Two messages of this request have the same id (%(id)s); each message needs an id of "
                            "its own. Nothing was stored.") % {"id": s[0]})
        seen.add(s[0])
    limit = max_new_messages()
    if len(new) > limit:
        raise Refused("too_many_messages",
                      _("This request adds %(count)s messages the chat does not have yet; at most %(limit)s may be "
                        "added at once. Send the conversation in smaller parts.") % {"count": len(new), "limit": limit})
    _check_parts(new)
    carried = {c.id for m in agent_input.messages if m.role == "assistant" for c in getattr(m, "tool_calls", None) or []}
    return _tool_results(thread, new, carried)


def own_ids(new):
    """select()'s rows, each whose id another thread holds under an id of the server's own (None):
    message ids are global, but clients number their messages per thread ("1", "2", ...), so such a
    message is new here, not dropped. Read with the writes (endpoint.record), not before an early
    RUN_STARTED: it changes which id is stored, not whether a run starts. An id longer than a
    message's column holds (200) is not stored either (PostgreSQL refused the insert: a 500, the
    turn lost); MESSAGES_SNAPSHOT then gives the client the id the message has here."""
    ids = [s[0] for s in new if s[0] and len(s[0]) <= MESSAGE_ID_MAX]
    elsewhere = set(Message.objects.filter(pk__in=ids).values_list("pk", flat=True)) if ids else set()
    return [(None, *s[1:]) if s[0] in elsewhere or len(s[0] or "") > MESSAGE_ID_MAX else s for s in new]


def _window(sent_turns, held_turns, has_history, ends_in_turn):
    """How many held turns a history starts with when it is only the latest part of the chat (a
    client that keeps a window of a long conversation): the longest run of the last held turns it
    begins with. Only for a request that carries replies (a history, not just new messages)."""
    if not has_history:
        return 0
    for k in range(min(len(sent_turns), len(held_turns)), 0, -1):
        if sent_turns[:k] == held_turns[-k:] and (k < len(sent_turns) or not ends_in_turn):
            return k
    return 0


def _common_start(sent_turns, held_turns, has_history, ends_in_turn):
    """How many held turns a history begins with when it then departs from the thread (the client
    edited a turn, or went back to one and went on): those are history, what follows is new. Only
    for a request that carries replies; its own last turn is always new."""
    if not has_history:
        return 0
    k = 0
    for sent, held in zip(sent_turns, held_turns, strict=False):  # the shorter ends the common start
        if sent != held:
            break
        k += 1
    return k - 1 if k and k == len(sent_turns) and ends_in_turn else k


def _check_parts(new):
    """Images only for a model that takes them, bounded in number and size; nothing else but text."""
    images = 0
    for row in new:
        for part in row[4] or []:
            kind = part.get("type")
            if row[1] == Message.Role.TOOL or kind not in ("text", "image"):
                raise Refused("unsupported_content",
                              _("Message %(id)s holds a part of type %(kind)s; only text, and images in user "
                                "messages, are accepted.") % {"id": row[0], "kind": repr(kind)})
            if kind == "image":
                images += 1
                _check_image(row[0], part["source"])
    if not images:
        return
    if not takes_images():
        raise Refused("images_unsupported",
                      # the setting that turns images on (AGUI_MODEL_VISION) is the operator's, not the person's
                      _("This agent's model does not take images; send the message as text."))
    if images > settings.AGUI_MAX_IMAGES:
        raise Refused("too_many_images",
                      _("This request adds %(count)s images; at most %(limit)s are accepted at once.") % {
                          "count": images, "limit": settings.AGUI_MAX_IMAGES})


def _check_image(message_id, source):
    where = {"id": message_id}
    if source["type"] == "url":
        url = source["value"]
        if not url.startswith(("https://", "http://")) or len(url) > MAX_IMAGE_URL:
            raise Refused("invalid_image", _("An image in message %(id)s has a URL that is not an http(s) URL of at "
                                             "most %(limit)s characters.") % {**where, "limit": MAX_IMAGE_URL})
        return
    if source["type"] != "data":  # a provider's file handle: only that provider could read it
        raise Refused("invalid_image", _("An image in message %(id)s is a provider file handle; send its data or a "
                                         "URL.") % where)
    if source["mimeType"] not in IMAGE_TYPES:
        raise Refused("invalid_image", _("An image in message %(id)s is %(type)s; accepted: %(accepted)s.") % {
            **where, "type": repr(source["mimeType"]), "accepted": ", ".join(IMAGE_TYPES)})
    limit = settings.AGUI_MAX_IMAGE_BYTES
    if len(source["value"]) * 3 // 4 > limit:
        raise Refused("image_too_large", _("An image in message %(id)s is larger than %(limit)s bytes.") % {
            **where, "limit": limit})
    try:
        binascii.a2b_base64(source["value"], strict_mode=True)
    except binascii.Error:
        raise Refused("invalid_image", _("An image in message %(id)s is not valid base64 data.") % where) from None


def _key(role, content, call_ids=()):
    return role + ":" + hashlib.sha256(json.dumps([content, sorted(call_ids)]).encode()).hexdigest()[:24]


def ignored(thread, agent_input, held):
    """[{id, role, key}] of the client's messages this run does not take and has not told this
    thread about yet (the CUSTOM `ignored_messages` notice; Run.ignored_messages remembers the keys).

    Told once per thread and distinct message, not every turn: clients resend their whole history,
    and a framework's instructions (Agent Framework sends its agent's as a system message) or a
    chat widget's local greeting would otherwise bring the same notice on every turn, which its
    user learns to skip. An assistant message the thread holds (by id, by its text, or by its tool
    calls: Agent Framework resends ours with new ids) is the thread's own and is not told. A user
    message sent under the id of one the thread holds, with other text (a client that edited an
    earlier turn in place), is not taken either (select() knows it by its id): it is told. So is a
    tool result, with other text, of a call whose result the thread holds.
    """
    edited = _edited(agent_input, held)
    candidates = [m for m in agent_input.messages if m.role in NOT_TAKEN or id(m) in edited]
    if not candidates:
        return []
    told, held_ids, held_texts, held_calls = set(), set(), set(), set()
    if thread is not None:
        told = {i.get("key") for row in Run.objects.filter(thread=thread).values_list("ignored_messages", flat=True)
                for i in row or []}
        assistants = list(thread.messages.filter(role=Message.Role.ASSISTANT).values_list("id", "content"))
        held_ids = {h[0] for h in assistants}
        held_texts = {h[1].strip() for h in assistants if h[1].strip()}
        held_calls = set(ToolCall.objects.filter(thread=thread).values_list("pk", flat=True))
    out, live = [], None
    for m in candidates:
        text = _text(m) if m.role == Message.Role.USER else m.content if isinstance(m.content, str) else ""
        calls = [c.id for c in getattr(m, "tool_calls", None) or []]
        if m.role == "assistant" and (m.id in held_ids or (text or "").strip() in held_texts
                                      or (calls and set(calls) <= held_calls) or not (text or calls)):
            continue
        if m.role == "assistant" and thread is not None:
            # a run still going (one whose client hung up: this POST stops it) stores its message as it
            # ends: the client's copy, cut where it stopped reading, is that message, not one of its own
            if live is None:
                live = Run.objects.filter(thread=thread, status__in=Run.ACTIVE).exists()
            if live:
                continue
        key = _key(m.role, text or "", calls)
        if key not in told:
            told.add(key)
            out.append({"id": m.id, "role": m.role, "key": key})
    return out


def _edited(agent_input, held):
    """The client's messages (by id(), the object's) that are copies of what the thread holds (`held`) with
    other text: a user message under a held one's id, and a tool result of a call the thread has the
    result of (a client's own record of it, or a forged one: _tool_results drops it, and this says so)."""
    turns = {h[0]: h[2] for h in held if h[1] == Message.Role.USER}
    results = {h[3]: h[2] for h in held if h[1] == Message.Role.TOOL and h[3]}
    return {id(m) for m in agent_input.messages
            if (m.role == Message.Role.USER and m.id in turns and _text(m) != turns[m.id])
            or (m.role == Message.Role.TOOL and m.tool_call_id in results and _text(m) != results[m.tool_call_id])}


def _tool_results(thread, new, carried=frozenset()):
    """Keep a tool result only for a frontend call the thread waits on; a resent one is dropped, and
    so is one of a call the thread never made that an assistant message of the request carries
    (`carried`): the client's history under ids it renewed, history as that assistant message is
    (never stored, never the model's). One with no such call in the request is refused."""
    call_ids = {s[3] for s in new if s[1] == Message.Role.TOOL}
    if not call_ids:
        return new
    waiting, answered = set(), set()
    if thread is not None:
        waiting = set(ToolCall.objects.filter(thread=thread, pk__in=call_ids, status=ToolCall.Status.CLIENT)
                      .values_list("pk", flat=True))
        answered = set(thread.messages.filter(role=Message.Role.TOOL, tool_call_id__in=call_ids)
                       .values_list("tool_call_id", flat=True))
    history = (call_ids - waiting - answered) & set(carried)
    unknown = sorted(call_ids - waiting - answered - history)
    if unknown:
        raise Refused("unknown_tool_call",
                      _("A tool result was sent for a tool call this chat is not waiting on (%(ids)s); only the "
                        "results of the chat's own pending client-side tool calls are accepted.") % {
                          "ids": ", ".join(unknown)})
    out, taken = [], set()
    for s in new:
        if s[1] == Message.Role.TOOL:
            if s[3] in answered or s[3] in taken or s[3] in history:
                continue  # its result is already in the chat (or earlier in this request), or history
            taken.add(s[3])
        out.append(s)
    return out
