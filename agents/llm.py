"""Chat-model adapters: the official OpenAI SDK, and an offline scripted model for demos.

Both yield the same small deltas so the runner does not care which one streams.
"""

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass

import openai
from django.conf import settings

from agui_project import jsoncheck

from .scripted_state import state_demo_reply
from .scripted_support import support_reply

try:  # the HTTP library the SDK streams with (openai 3 moved to httpx2): its errors escape a raw stream
    import httpx2 as sdk_http
except ImportError:  # pragma: no cover - openai < 3
    import httpx as sdk_http


class ModelUnavailable(Exception):
    """The model could not be reached or failed on its side (network, 5xx, rate limit)."""


class ModelError(Exception):
    """The model answered, but not usefully (4xx, broken stream)."""


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolCallDelta:
    index: int
    id: str | None
    name: str | None
    arguments: str


class OpenAIChatModel:
    offline = False

    _clients = {}
    _lock = threading.Lock()

    def __init__(self):
        self.name = settings.AGUI_MODEL

    def _client(self):
        key = (settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = openai.OpenAI(
                    api_key=settings.OPENAI_API_KEY,
                    base_url=settings.OPENAI_BASE_URL,
                    timeout=settings.AGUI_MODEL_TIMEOUT,
                    max_retries=1,
                )
            return self._clients[key]

    def stream(self, messages, tools):
        kwargs = {"model": self.name, "messages": messages, "stream": True}
        if tools:
            kwargs["tools"] = tools
        answered = finished = False
        try:
            # The SDK's own stream builds a pydantic model per chunk (300-600 us each, the worker's
            # main cost at thousands of chunks/s); the raw response keeps its request, retries and
            # status-error mapping, and a chunk is then one json.loads.
            with self._client().chat.completions.with_streaming_response.create(**kwargs) as response:
                for data in sse_data(response.iter_lines()):
                    if data == "[DONE]":
                        finished = True
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError as exc:
                        raise ModelError(f"the model's stream held a chunk that is not JSON: {data[:80]!r}") from exc
                    if not isinstance(chunk, dict):
                        raise ModelError(f"the model's stream held a chunk that is not an object: {data[:80]!r}")
                    # a NUL or a lone surrogate ("\ud800") would poison the thread once stored
                    clean = jsoncheck.scrub if jsoncheck.suspect(data) else str
                    if chunk.get("error"):
                        error = chunk["error"]
                        raise ModelError(error.get("message", error) if isinstance(error, dict) else error)
                    choices = chunk.get("choices") or []
                    if not choices:
                        continue
                    answered = True
                    choice = choices[0]
                    finished = finished or bool(choice.get("finish_reason"))
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        yield TextDelta(clean(delta["content"]))
                    for tc in delta.get("tool_calls") or []:
                        fn = tc.get("function") or {}
                        yield ToolCallDelta(tc.get("index", 0), tc.get("id"), fn.get("name") and clean(fn["name"]),
                                            clean(fn.get("arguments") or ""))
        except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                openai.InternalServerError, sdk_http.TransportError) as exc:
            raise ModelUnavailable(str(exc) or type(exc).__name__) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise ModelUnavailable(str(exc)) from exc
            raise ModelError(str(exc)) from exc
        except openai.APIError as exc:
            raise ModelError(str(exc)) from exc
        if not answered:  # a 200 with no choice at all is no answer, not an empty success
            raise ModelError("the model's stream ended without an answer")
        if not finished:  # neither [DONE] nor a finish_reason: the body stopped part-way
            raise ModelUnavailable("the model's stream was cut off before it finished")


def sse_data(lines):
    """The `data:` payload of each server-sent event (multi-line data joined with newlines)."""
    data = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
        # event:, id:, retry: and ":" comments carry nothing a chat completion needs
    if data:
        yield "\n".join(data)


class ScriptedModel:
    """No API key: plays the demo prompts of the catalog offline, streaming word by word."""

    offline = True
    name = "offline demo model"

    def stream(self, messages, tools):
        reply = scripted_reply(messages, tools)
        if reply.get("error"):  # a demo prompt that shows what a model outage looks like
            raise ModelUnavailable(reply["error"])
        pace = reply.get("pace", 0)  # seconds per word: lets a person (or a test) watch text grow
        for word in re.findall(r"\S+\s*|\s+", reply.get("text") or ""):
            if pace:
                time.sleep(pace)
            yield TextDelta(word)
        args_pace = reply.get("args_pace", 0)  # seconds per arguments chunk: lets predicted state be watched
        for index, call in enumerate(reply.get("tool_calls") or []):
            yield ToolCallDelta(index, call["id"], call["name"], "")
            args = call["arguments"]
            for start in range(0, len(args), 12):
                if args_pace:
                    time.sleep(args_pace)
                yield ToolCallDelta(index, None, None, args[start:start + 12])


def get_model():
    return OpenAIChatModel() if settings.OPENAI_API_KEY else ScriptedModel()


# --- the self-check of approval mode `model`: the model asks itself whether a person must confirm --

SELF_CHECK_SYSTEM = (
    "You review an AI agent's next action before it runs, and decide whether a person must confirm it. "
    'Answer with a JSON object only: {"needs_human": true or false, "reason": "one or two sentences"}.'
)


def self_check_messages(tool_name, arguments, *, description="", risk="", reversible=False, task=""):
    action = {"tool": tool_name, "arguments": arguments, "risk": risk, "reversible": reversible}
    prompt = (
        f"The agent is working on this task: {task or '(not stated)'}\n\n"
        f"Its next step: {description or tool_name}\n"
        f"Action (JSON): {json.dumps(action, sort_keys=True)}\n\n"
        "How sure are you that this step is what the user wants?\n"
        '- If the step clearly matches the task and its effect is what the user expects, answer {"needs_human": false}.\n'
        "- A person must confirm when any of these holds:\n"
        "  - the task is ambiguous and your reading may differ from what the user meant;\n"
        "  - the possible ways to do it differ a lot and you cannot tell which the user prefers;\n"
        "  - the situation is beyond what you expected, or the step may have effects the user did not ask for.\n\n"
        'Reply in JSON: {"needs_human": true/false, "reason": "why"}'
    )
    return [{"role": "system", "content": SELF_CHECK_SYSTEM}, {"role": "user", "content": prompt}]


def parse_self_check(content):
    try:
        data = json.loads(content or "")
    except json.JSONDecodeError as exc:
        raise ModelError(f"the self-check answer is not JSON: {exc.msg}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("needs_human"), bool):
        raise ModelError('the self-check answer lacks a boolean "needs_human"')
    return {"needs_human": data["needs_human"], "reason": str(data.get("reason") or "")[:2000]}


def self_check(tool_name, arguments, *, description="", risk="", reversible=False, task=""):
    """A JSON-mode call: does this tool call need a person? -> {"needs_human": bool, "reason": str}.

    Offline (no API key) the scripted model answers deterministically. Raises ModelUnavailable /
    ModelError; the approval policy then lets a person decide.
    """
    messages = self_check_messages(tool_name, arguments, description=description, risk=risk,
                                   reversible=reversible, task=task)
    if not settings.OPENAI_API_KEY:
        return parse_self_check(scripted_reply(messages, [])["text"])
    model = OpenAIChatModel()
    try:
        completion = model._client().chat.completions.create(
            model=model.name, messages=messages, response_format={"type": "json_object"}, temperature=0,
        )
    except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
            openai.InternalServerError) as exc:
        raise ModelUnavailable(str(exc)) from exc
    except openai.APIError as exc:
        raise ModelError(str(exc)) from exc
    if not completion.choices:
        raise ModelError("the self-check returned no choices")
    return parse_self_check(completion.choices[0].message.content)


# --- the offline script -------------------------------------------------------------------

_AMOUNT = r"\$?\s*(?P<amount>\d[\d,]*(?:\.\d+)?)\s*(?P<cur>usd|eur|gbp|dollars?|euros?|pounds?)?"
_TRANSFER = re.compile(
    rf"(?:transfer|send|move|pay)\s+{_AMOUNT}.*?from\s+(?:account\s+)?(?P<src>\d{{6,20}})"
    r".*?to\s+(?:account\s+)?(?P<dst>\d{6,20})",
    re.I | re.S,
)
_CURRENCY = {"usd": "USD", "dollar": "USD", "dollars": "USD", "eur": "EUR", "euro": "EUR", "euros": "EUR",
             "gbp": "GBP", "pound": "GBP", "pounds": "GBP"}


def _call(name, arguments):
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "name": name, "arguments": json.dumps(arguments)}


def _tool_names(tools):
    return {t.get("function", {}).get("name") for t in tools or []}


def _text(content):
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def scripted_reply(messages, tools):
    """The demo conversation, as a rule-based function of the history: {text, tool_calls}."""
    if messages and messages[0].get("content") == SELF_CHECK_SYSTEM:
        return _self_check_reply(messages)
    names = _tool_names(tools)
    support = support_reply(messages, names)  # the support workflow's agents (triage, refund, order)
    if support:
        return support
    last = messages[-1] if messages else {"role": "user", "content": ""}
    if last.get("role") == "tool":
        # summarise every tool result since the last assistant turn that asked for tools
        results = []
        for msg in reversed(messages):
            if msg.get("role") != "tool":
                break
            results.append(_text(msg.get("content")))
        results.reverse()
        lines = []
        for result in results:
            lower = result.lower()
            if "rejected" in lower or "declined" in lower or "refused" in lower or "timed out" in lower:
                lines.append(f"I did not go ahead: {result} I won't try to do this another way unless you ask me to.")
            elif lower.startswith("error"):
                lines.append(f"That did not work: {result}")
            else:
                lines.append(f"Done. {result}")
        return {"text": "\n\n".join(lines) or "Done."}

    text = _text(last.get("content"))
    match = _TRANSFER.search(text)
    if match and "transfer_money" in names:
        amount = float(match["amount"].replace(",", ""))
        currency = _CURRENCY.get((match["cur"] or "usd").lower(), "USD")
        args = {"from_account": match["src"], "to_account": match["dst"], "amount": amount, "currency": currency}
        return {
            "text": f"I'll transfer {amount:.2f} {currency} from account {match['src']} to account "
            f"{match['dst']}. Transfers are reviewed before they happen.",
            "tool_calls": [_call("transfer_money", args)],
        }
    sub = re.search(r"\b(sub_[A-Za-z0-9_]+)", text)
    if sub and re.search(r"cancel", text, re.I) and "cancel_subscription" in names:
        return {
            "text": f"I can cancel subscription {sub[1]} for you; please confirm.",
            "tool_calls": [_call("cancel_subscription", {"subscription_id": sub[1]})],
        }
    acct = re.search(r"\b(\d{6,20})\b", text)
    if acct and re.search(r"balance", text, re.I) and "check_balance" in names:
        return {"text": "Let me check that balance.", "tool_calls": [_call("check_balance", {"account": acct[1]})]}
    ops = _ops_reply(text, names)  # the ops agent (agents/catalog/ops.py)
    if ops:
        return ops
    chat_demo = _chat_demo_reply(text)
    if chat_demo:
        return chat_demo
    state_demo = state_demo_reply(text, messages, names)  # the recipe / planner / writer agents
    if state_demo:
        return state_demo
    if "write_file" in names:
        return {"text": _OPS_HELP}
    return {
        "text": "I'm the offline demo model, so I only understand the demo requests. Try:\n\n"
        "- *Transfer $500 from account 1234567890 to account 0987654321*\n"
        "- *What's the balance of account 1234567890?*\n"
        "- *Cancel my subscription sub_123*"
    }


# Chat-page demos (any agent): a paced reply to watch stream (and Stop), model output that tries
# to inject HTML, and a model outage (RUN_ERROR with Retry).
_STORY = (
    "Once upon a time a small bank kept its ledgers in a lighthouse by the sea. "
    "Every evening the keeper climbed the stairs, counted the coins twice and wrote the totals "
    "in a book with a green cover.\n\n"
    "One winter night a storm took the power, and the keeper counted by candlelight. "
    "A clerk from the town knocked on the door and asked to move all the money across the bay "
    "before morning. The keeper smiled, wrote the request on a card and said that a second person "
    "would have to read it first.\n\n"
    "By dawn the storm had passed. The reviewer read the card, changed one number, and signed it. "
    "The money crossed the bay exactly once, the book with the green cover was balanced, and the "
    "keeper went to sleep while the gulls argued about breakfast. The end."
)
_HTML_DEMO = (
    "Here is **bold**, *italic* and `code`, a [safe link](https://example.com/docs) and raw HTML "
    "that must stay text:\n\n"
    "<script>window.aguiPwned = true; document.title = 'pwned';</script>\n"
    "<img src=\"x\" onerror=\"window.aguiPwned = true\">\n"
    "[a javascript link](javascript:window.aguiPwned=true) and <b onclick=\"window.aguiPwned=true\">bold tag</b>"
)


def _chat_demo_reply(text):
    if re.search(r"\blong story\b", text, re.I):
        return {"text": _STORY, "pace": 0.05}
    if re.search(r"\b(raw html|html demo)\b", text, re.I):
        return {"text": _HTML_DEMO}
    if re.search(r"\bmodel outage\b", text, re.I):
        return {"error": "the offline demo model simulated an outage"}
    return None


# --- the ops agent's demo prompts, and its self-check ---------------------------------------

_OPS_HELP = (
    "I'm the offline demo model for the ops agent; I work inside a sandbox directory. Try:\n\n"
    "- *List the files*\n"
    "- *Write 'hello' to notes.txt* (then *Overwrite notes.txt with 'bye'*: you confirm it)\n"
    "- *Read notes.txt*\n"
    "- *Rename notes.txt to old-notes.txt*\n"
    "- *Delete old-notes.txt* (a reviewer decides) or *Delete /etc/hosts* (blocked by policy)\n"
    "- *Email bob@example.com subject 'Status' saying 'All good'* (a reviewer decides)\n"
    "- *Run `ls -la`* (the model checks itself whether you should confirm) or *Run `cat notes.txt`*\n"
    "- *Delete the directory logs* (denied by policy)"
)
_PATH = r"[`'\"]?(?P<{name}>[\w./~-]+?)[`'\"]?"
_QUOTED = r"[`'\"](?P<{name}>.+?)[`'\"]"
_OPS_PATTERNS = [
    ("delete_directory", re.compile(r"\b(?:delete|remove)\s+(?:the\s+)?(?:directory|folder|dir)\s+"
                                    + _PATH.format(name="path") + r"[.!?]?$", re.I)),
    ("rename_file", re.compile(r"\b(?:rename|move)\s+" + _PATH.format(name="src") + r"\s+to\s+"
                               + _PATH.format(name="dst") + r"[.!?]?$", re.I)),
    ("delete_file", re.compile(r"\b(?:delete|remove)\s+(?:the\s+file\s+)?" + _PATH.format(name="path")
                               + r"[.!?]?$", re.I)),
    ("overwrite", re.compile(r"\boverwrite\s+" + _PATH.format(name="path") + r"\s+with\s+"
                             + _QUOTED.format(name="content"), re.I)),
    ("write_file", re.compile(r"\bwrite\s+" + _QUOTED.format(name="content") + r"\s+(?:to|into)\s+"
                              + _PATH.format(name="path") + r"[.!?]?$", re.I)),
    ("read_file", re.compile(r"\b(?:read|show|open)\s+(?:the\s+file\s+)?" + _PATH.format(name="path")
                             + r"[.!?]?$", re.I)),
    ("list_files", re.compile(r"\blist\s+(?:the\s+)?files(?:\s+in\s+" + _PATH.format(name="path") + r")?", re.I)),
    ("execute_command", re.compile(r"\brun\s+" + _QUOTED.format(name="command"), re.I)),
    ("send_email", re.compile(r"\be-?mail\s+(?:to\s+)?(?P<to>[^\s@]+@[^\s@]+\.[A-Za-z]{2,})"
                              r"(?:\s+(?:with\s+)?subject\s+" + _QUOTED.format(name="subject") + r")?"
                              r"(?:\s+(?:saying|body)\s+" + _QUOTED.format(name="body") + r")?", re.I)),
]


def _ops_reply(text, names):
    if "write_file" not in names:
        return None
    text = text.strip()
    for kind, pattern in _OPS_PATTERNS:
        m = pattern.search(text)
        if not m:
            continue
        g = m.groupdict()
        if kind == "list_files" and "list_files" in names:
            path = g.get("path") or "/"
            return {"text": f"Listing {path}.", "tool_calls": [_call("list_files", {"path": path})]}
        if kind == "read_file" and "read_file" in names:
            return {"text": f"Reading {g['path']}.", "tool_calls": [_call("read_file", {"path": g["path"]})]}
        if kind in ("write_file", "overwrite"):
            overwrite = kind == "overwrite"
            note = " This replaces its current content, so you'll be asked to confirm." if overwrite else ""
            return {"text": f"I'll write {len(g['content'])} characters to {g['path']}.{note}",
                    "tool_calls": [_call("write_file", {"path": g["path"], "content": g["content"],
                                                        "overwrite": overwrite})]}
        if kind == "rename_file" and "rename_file" in names:
            return {"text": f"I'll rename {g['src']} to {g['dst']}: that copies it, then deletes the original.",
                    "tool_calls": [_call("rename_file", {"source": g["src"], "destination": g["dst"]})]}
        if kind == "delete_directory" and "delete_directory" in names:
            return {"text": f"I'll delete the directory {g['path']} and everything in it.",
                    "tool_calls": [_call("delete_directory", {"path": g["path"]})]}
        if kind == "delete_file" and "delete_file" in names:
            return {"text": f"I'll delete {g['path']}. Deleting is permanent, so a reviewer decides first.",
                    "tool_calls": [_call("delete_file", {"path": g["path"]})]}
        if kind == "execute_command" and "execute_command" in names:
            return {"text": f"I'll run `{g['command']}` in the sandbox.",
                    "tool_calls": [_call("execute_command", {"command": g["command"]})]}
        if kind == "send_email" and "send_email" in names:
            args = {"to": g["to"], "subject": g.get("subject") or "A note from the ops agent",
                    "body": g.get("body") or "Hello from the ops agent."}
            return {"text": f"I'll email {g['to']}; a reviewer approves outgoing mail first.",
                    "tool_calls": [_call("send_email", args)]}
    return None


_SELF_CHECK_ACTION = re.compile(r"^Action \(JSON\): (?P<json>\{.*\})$", re.M)
# reading a file's content may expose what the user did not mean to share; listing does not
_CONTENT_READERS = {"cat", "head", "tail", "grep"}


def _self_check_reply(messages):
    """The offline model's self-check: deterministic, from the action alone."""
    m = _SELF_CHECK_ACTION.search(_text(messages[-1].get("content")))
    try:
        action = json.loads(m["json"]) if m else {}
    except json.JSONDecodeError:
        action = {}
    tool, args = action.get("tool", ""), action.get("arguments") or {}
    if tool == "execute_command":
        program = str(args.get("command", "")).split()[:1]
        if program and program[0] in _CONTENT_READERS:
            answer = (True, f"`{program[0]}` prints file contents, which may be private; "
                            "the user should confirm which file they meant.")
        else:
            answer = (False, "The command only lists or counts files in the sandbox and changes nothing.")
    elif action.get("risk") in ("high", "critical") or not action.get("reversible", False):
        answer = (True, f"{tool or 'This action'} cannot be undone or is high risk, so a person should confirm it.")
    else:
        answer = (False, f"{tool or 'This action'} is reversible and low impact, and matches the task.")
    return {"text": json.dumps({"needs_human": answer[0], "reason": answer[1]})}
