"""The offline demo model (no API key): `scripted_reply` asks each demo agent's script in turn.

Each script is a pure function of the conversation in this package, one per demo agent it plays.
"""

import re
import time

from django.utils import translation
from django.utils.translation import gettext as _

from ..deltas import ModelUnavailable, TextDelta, ToolCallDelta
from ..self_check import SELF_CHECK_SYSTEM
from .banking import banking_reply
from .chat import chat_demo_reply
from .common import guidance, retell, text_of, tool_names
from .notes import notes_reply
from .ops import OPS_HELP, ops_reply
from .self_check import self_check_reply
from .starters import starters, understood
from .state import state_demo_reply
from .support import support_reply


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


def scripted_reply(messages, tools):
    """The demo conversation, as a rule-based function of the history: {text, tool_calls}.

    A starter prompt typed in another of LANGUAGES is read as its English original, and the reply
    is said in the language of the person's latest message (the scripts match English; what they
    say is marked for translation). Anything else is answered in English, as the scripts read it,
    except that a message they do not understand at all is told so in the active language (the chat
    owner's, in a run's worker): in what language it was typed the scripts cannot tell.
    """
    if messages and messages[0].get("content") == SELF_CHECK_SYSTEM:
        return self_check_reply(messages)
    ambient = translation.get_language()
    messages, language = _read_in_english(messages)
    with translation.override(language):
        reply = _reply(messages, tools)
    if "help" in reply:  # said in the starter's language, else the chat's: what the person typed is not known
        with translation.override(language if language != "en" else ambient):
            reply = {"text": demo_help(reply["help"])}
    return reply


def demo_help(agent):
    """What the demo model understands: the agent's starter prompts (None: the chat lists them)."""
    if agent is None:
        return _("I'm the offline demo model, so I only understand the demo requests. A new chat with this "
                 "assistant lists them.")
    return _("I'm the offline demo model. Try:") + "\n\n" + "\n".join(f"- *{prompt}*" for prompt in starters(agent))


def _read_in_english(messages):
    """(the messages with translated starter prompts replaced by their English originals, the
    language of the latest user message: "en" unless it is a starter prompt in another language)."""
    out, language = [], "en"
    for msg in messages:
        if msg.get("role") == "user" and isinstance(msg.get("content"), str):
            english, said_in = understood(msg["content"])
            language = said_in or "en"
            msg = {**msg, "content": english, "typed": msg["content"]}  # typed: what the person wrote
        elif msg.get("role") == "user":
            language = "en"
        out.append(msg)
    return out, language


def _reply(messages, tools):
    names = tool_names(tools)
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
            results.append(text_of(msg.get("content")))
        results.reverse()
        lines = []
        for result in results:
            lower = result.lower()
            words = guidance(result)
            if words is not None:  # a reviewer's respond: follow it, do not retell the instructions
                lines.append(_("I did not run it: the reviewer says “%(words)s”. I will go by that; "
                               "tell me how you would like to continue.") % {"words": words})
            elif "rejected" in lower or "declined" in lower or "refused" in lower or "timed out" in lower \
                    or "not executed" in lower:
                lines.append(_("I did not go ahead: %(why)s I won't try to do this another way unless you ask me "
                               "to.") % {"why": retell(result)})
            elif lower.startswith("error") or ". error:" in lower:  # after an edit's note, too
                lines.append(_("That did not work: %(why)s") % {"why": retell(result)})
            else:
                lines.append(_("Done. %(result)s") % {"result": retell(result)})
        return {"text": "\n\n".join(lines) or _("Done.")}

    text = text_of(last.get("content"))
    banking = banking_reply(text, names)  # the banking agent (agents/catalog/banking.py)
    if banking:
        return banking
    notes = notes_reply(text, names)  # the notes agent: its MCP server's tools (agents/catalog/notes.py)
    if notes:
        return notes
    ops = ops_reply(text, names)  # the ops agent (agents/catalog/ops.py)
    if ops:
        return ops
    chat_demo = chat_demo_reply(text)
    if chat_demo:
        return chat_demo
    state_demo = state_demo_reply(text, messages, names)  # the recipe / planner / writer agents
    if state_demo:
        return state_demo
    if "write_file" in names:
        return {"text": OPS_HELP}
    return {"help": None}  # the chat shows the demo requests in an empty conversation only
