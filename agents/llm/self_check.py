"""The self-check of approval mode `model`: the model asks itself whether a person must confirm.

A JSON-mode call; offline, the demo model's deterministic answer (scripted/self_check.py).
"""

import json

import openai
from django.conf import settings

from .deltas import ModelError, ModelUnavailable
from .openai_chat import OpenAIChatModel, as_given
from .scripted.self_check import self_check_reply

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
        return parse_self_check(self_check_reply(messages)["text"])
    model = OpenAIChatModel()
    try:
        completion = model._client().chat.completions.create(
            model=model.name, response_format={"type": "json_object"}, temperature=0, **as_given(messages),
        )
    except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
            openai.InternalServerError) as exc:
        raise ModelUnavailable(str(exc)) from exc
    except openai.APIError as exc:
        raise ModelError(str(exc)) from exc
    if not completion.choices:
        raise ModelError("the self-check returned no choices")
    return parse_self_check(completion.choices[0].message.content)
