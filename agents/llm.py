"""Chat-model adapters: the official OpenAI SDK, and an offline scripted model for demos.

Both yield the same small deltas so the runner does not care which one streams.
"""

import json
import re
import threading
import uuid
from dataclasses import dataclass

import openai
from django.conf import settings


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
        try:
            for chunk in self._client().chat.completions.create(**kwargs):
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    yield TextDelta(delta.content)
                for tc in delta.tool_calls or []:
                    fn = tc.function
                    yield ToolCallDelta(tc.index, tc.id, fn.name if fn else None, (fn.arguments or "") if fn else "")
        except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                openai.InternalServerError) as exc:
            raise ModelUnavailable(str(exc)) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise ModelUnavailable(str(exc)) from exc
            raise ModelError(str(exc)) from exc
        except openai.APIError as exc:
            raise ModelError(str(exc)) from exc


class ScriptedModel:
    """No API key: plays the demo prompts of the catalog offline, streaming word by word."""

    offline = True
    name = "offline demo model"

    def stream(self, messages, tools):
        reply = scripted_reply(messages, tools)
        for word in re.findall(r"\S+\s*|\s+", reply.get("text") or ""):
            yield TextDelta(word)
        for index, call in enumerate(reply.get("tool_calls") or []):
            yield ToolCallDelta(index, call["id"], call["name"], "")
            args = call["arguments"]
            for start in range(0, len(args), 12):
                yield ToolCallDelta(index, None, None, args[start:start + 12])


def get_model():
    return OpenAIChatModel() if settings.OPENAI_API_KEY else ScriptedModel()


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
    names = _tool_names(tools)
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
    return {
        "text": "I'm the offline demo model, so I only understand the demo requests. Try:\n\n"
        "- *Transfer $500 from account 1234567890 to account 0987654321*\n"
        "- *What's the balance of account 1234567890?*\n"
        "- *Cancel my subscription sub_123*"
    }
