"""A model call's start in a worker's process: from the call to its first streamed delta, for
conversations of a few to a hundred messages, our model client against the OpenAI SDK's own
create() for the same request (what an agent framework built on the SDK sends it through).

Run by `make bench` (scenario `model`) as `python bench/model_call.py --reps N`; prints one JSON
object. The model is tests/fake_llm.py on loopback (it answers at once), the tools the banking
agent's, the conversation a system message and turns of a user message, an assistant tool call
and its result. Wall time and this thread's CPU time, p50 and p95, per size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents.llm import OpenAIChatModel  # noqa: E402
from agents.registry import get_agent  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402

SIZES = (4, 40, 100)
WARM = 5


def pct(values, p):
    values = sorted(values)
    return round(values[min(len(values) - 1, round((len(values) - 1) * p / 100))], 2)


def conversation(size):
    """A system message, then (user, assistant's tool call, its result) turns: size - 1 is a multiple of 3."""
    out = [{"role": "system", "content": "You are the bank's assistant. " * 20}]
    for k in range((size - 1) // 3):
        call = {"id": f"call_{k}", "type": "function",
                "function": {"name": "cancel_subscription", "arguments": '{"subscription_id": "sub_123"}'}}
        out += [{"role": "user", "content": "Please cancel my streaming subscription, the one I never use."},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": "Cancelled subscription sub_123."}]
    return out


def ours(messages, tools):
    """Starts the call, returns what finishes it (reads the rest of the answer)."""
    stream = OpenAIChatModel().stream(messages, tools)
    next(stream)
    return lambda: list(stream)


def sdks(messages, tools):
    manager = OpenAIChatModel()._client().chat.completions.with_streaming_response.create(
        model=settings.AGUI_MODEL, messages=messages, tools=tools, stream=True)
    lines = manager.__enter__().iter_lines()
    next(line for line in lines if line.startswith("data:"))
    return lambda: manager.__exit__(None, None, None)


def timed(fake, start, messages, tools, reps):
    walls, cpus = [], []
    for i in range(reps + WARM):
        fake.push("ok")
        t, c = time.perf_counter(), time.thread_time()
        finish = start(messages, tools)
        wall, cpu = time.perf_counter() - t, time.thread_time() - c
        finish()
        if i >= WARM:
            walls.append(wall * 1000)
            cpus.append(cpu * 1000)
    return {"wall_ms": {"p50": pct(walls, 50), "p95": pct(walls, 95)}, "cpu_ms": {"p50": pct(cpus, 50)}, "n": reps}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    fake = FakeLLM().start()
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL, settings.AGUI_MODEL = "bench-key", fake.base_url, "fake-model"
    tools = [t.openai_spec() for t in get_agent("banking").all_tools()]
    out = {}
    try:
        for size in SIZES:
            messages = conversation(size)
            out[str(size)] = {"ours": timed(fake, ours, messages, tools, args.reps),
                              "sdk": timed(fake, sdks, messages, tools, args.reps)}
    finally:
        fake.stop()
    assert not fake.rejected, fake.rejected[0][1]  # the fake answers 400 where OpenAI would
    print(json.dumps(out))


if __name__ == "__main__":
    main()
