"""Drives a live agui-inbox server with Microsoft Agent Framework: its own `Agent` over
`AGUIChatClient` (agent-framework-ag-ui), used the way MAF's docs show. Runs in .venv-maf (see
requirements.txt), started by tests/integration/test_maf_client.py, which checks the database and
the model's requests afterwards.

Environment: AGUI_BASE_URL (http://host:port), AGUI_TOKEN (alice's API token), AGUI_FOREIGN_THREAD
(a banking thread of another user). Argument: comma-separated scenario names (default: all).
Output: progress on stderr; a JSON summary as the last line of stdout. Exit 1 on any failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
import uuid

import httpx
from agent_framework import Agent
from agent_framework.ag_ui import AGUIChatClient

BASE = os.environ["AGUI_BASE_URL"].rstrip("/")
TOKEN = os.environ["AGUI_TOKEN"]
# no trailing slash: MAF strips it anyway
ENDPOINT = f"{BASE}/agui/banking"


def log(line):
    print(line, file=sys.stderr, flush=True)


def expect(cond, message, detail=None):
    if not cond:
        raise AssertionError(message + ("" if detail is None else f": {json.dumps(detail, default=str)[:1500]}"))


class Chat:
    """One MAF conversation on one server thread: Agent + AGUIChatClient + session, thread pinned."""

    def __init__(self, thread_id=None, token=TOKEN, tools=()):
        async def show(request):  # what MAF sent, for the test's failure message
            log(f"  POST {request.url}: {request.content.decode()[:1500]}")

        self.http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60,
                                      event_hooks={"request": [show]})
        self.agent = Agent(name="banking", client=AGUIChatClient(endpoint=ENDPOINT, http_client=self.http),
                           tools=list(tools))
        self.session = self.agent.create_session()
        self.thread_id = thread_id or f"maf-{uuid.uuid4().hex}"

    async def turn(self, prompt, **options):
        """One agent.run, streamed: {text, errors, interrupts, tool_results, run_id, thread_id}."""
        out = {"text": "", "errors": [], "interrupts": [], "tool_results": [], "calls": [], "thread_id": None}
        stream = self.agent.run(prompt, stream=True, session=self.session,
                                options={"metadata": {"thread_id": self.thread_id}, **options})
        async for update in stream:
            props = update.additional_properties or {}
            out["thread_id"] = props.get("thread_id") or out["thread_id"]
            if props.get("run_id"):
                out["run_id"] = props["run_id"]
            if "interrupts" in props:
                out["interrupts"] = props["interrupts"]
            for content in update.contents:
                if content.type == "text":
                    out["text"] += content.text
                elif content.type == "error":
                    out["errors"].append(content.message)
                elif content.type == "function_result":
                    out["tool_results"].append({"call_id": content.call_id, "result": content.result})
                elif content.type == "function_call" and content.name:
                    out["calls"].append({"call_id": content.call_id, "name": content.name})
        await stream.get_final_response()
        log(f"  turn {prompt!r}: {json.dumps(out, default=str)[:400]}")
        return out

    async def close(self):
        await self.http.aclose()


async def three_turns():
    """Three turns on one thread: MAF resends the whole history with new ids every turn."""
    chat = Chat()
    try:
        texts = []
        for n in (1, 2, 3):
            out = await chat.turn(f"[maf] turn {n}")
            expect(not out["errors"], f"turn {n} had no error", out)
            expect(out["thread_id"] == chat.thread_id, "the pinned thread id is the server's", out)
            expect(out["text"] == f"echo: [maf] turn {n}", f"turn {n} answered", out)
            texts.append(out["text"])
        return {"threadId": chat.thread_id, "texts": texts}
    finally:
        await chat.close()


async def server_tool():
    """A tool the server runs (its result comes back in-stream), then another turn."""
    chat = Chat()
    try:
        first = await chat.turn("What is the balance of account 1234567890?")
        expect(not first["errors"], "no error", first)
        expect(len(first["tool_results"]) == 1, "one server-side tool result", first)
        expect("5432.10" in str(first["tool_results"][0]["result"]), "the balance", first)
        second = await chat.turn("[maf] after the tool")
        expect(not second["errors"], "the turn after the tool result has no error", second)
        expect(second["text"] == "echo: [maf] after the tool", "answered", second)
        return {"threadId": chat.thread_id, "toolCallId": first["tool_results"][0]["call_id"]}
    finally:
        await chat.close()


async def approval():
    """A call the requester approves: the interrupt on RUN_FINISHED, answered with resume."""
    chat = Chat()
    try:
        first = await chat.turn("Please cancel subscription sub_456")
        expect(not first["errors"], "no error", first)
        expect(len(first["interrupts"]) == 1, "one interrupt", first)
        interrupt = first["interrupts"][0]
        second = await chat.turn(None, resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                "payload": {"approved": True}}])
        expect(not second["errors"], "the resumed run has no error", second)
        expect(any("is cancelled" in str(r["result"]) for r in second["tool_results"]), "the tool ran", second)
        third = await chat.turn("[maf] after the approval")
        expect(not third["errors"] and third["text"] == "echo: [maf] after the approval", "a turn after it", third)
        return {"threadId": chat.thread_id, "interruptId": interrupt["id"], "toolCallId": interrupt.get("toolCallId"),
                "reason": interrupt.get("reason")}
    finally:
        await chat.close()


async def errors():
    """Refusals come in-stream, so MAF shows their sentence (an HTTP error would be ResponseNotRead)."""
    foreign = Chat(thread_id=os.environ["AGUI_FOREIGN_THREAD"])
    mine = Chat()
    try:
        out = await foreign.turn("[maf] let me in")
        expect(len(out["errors"]) == 1 and "already taken" in out["errors"][0], "another's thread: readable", out)
        await mine.turn("[maf] a thread of my own")
        bogus = await mine.turn(None, resume=[{"interruptId": "no-such-interrupt", "status": "resolved",
                                               "payload": {"approved": True}}])
        expect(len(bogus["errors"]) == 1 and bogus["errors"][0], "an unknown interrupt: readable", bogus)
        # before authentication there is no stream: MAF raises, without the body (why the rest is in-stream)
        anonymous = Chat(token="not-a-token")
        try:
            await anonymous.turn("[maf] who am I?")
            raised = None
        except Exception as exc:  # noqa: BLE001 - which one MAF raises is the finding
            raised = f"{type(exc).__name__}: {exc}"
        finally:
            await anonymous.close()
        expect(raised is not None, "a 401 raises in MAF")
        return {"forbidden": out["errors"][0], "unknownInterrupt": bogus["errors"][0], "http401": raised}
    finally:
        await foreign.close()
        await mine.close()


async def line_breaks():
    """An answer holding U+2028, U+2029 and U+0085, which JSON may carry unescaped in a string: MAF
    reads the stream with httpx's aiter_lines(), and str.splitlines() ends a line at each of them
    (the event's data line cut in two, MAF logs "Failed to parse SSE data" and drops the event)."""
    chat = Chat()
    try:
        prompt = "[maf] one\u2028two\u2029three\x85four"
        out = await chat.turn(prompt)
        expect(not out["errors"], "no error", out)
        expect(out["text"] == f"echo: {prompt}", "the whole answer, its separators included", out)
        return {"threadId": chat.thread_id}
    finally:
        await chat.close()


async def run_ends():
    """Runs a misbehaving model ends (tests/integration/test_maf_client_run_ends.py gives its
    replies): past AGUI_MAX_TURNS, cut at its length limit, empty. Each is one readable error in MAF,
    and the next turn (MAF resends the history, the failed run's calls and results included, with
    new ids) is answered."""
    said = {}
    for prompt, code in (("[loop] check my balance forever", "turn_limit"),
                         ("[cut] tell me everything", "answer_cut"), ("[empty] hello?", "model_error")):
        chat = Chat()
        try:
            out = await chat.turn(prompt)
            expect(len(out["errors"]) == 1 and out["errors"][0], f"{code}: one readable error", out)
            again = await chat.turn("[plain] are you still there?")
            expect(not again["errors"] and again["text"] == "Still here.", f"after {code}: the next turn", again)
            said[code] = {"threadId": chat.thread_id, "error": out["errors"][0]}
        finally:
            await chat.close()
    return said


async def ids_reused():
    """A model that numbers its calls call_0 in every answer: the second call gets an id of the
    server's; MAF holds each call and result by the ids it was given and resends them."""
    chat = Chat()
    try:
        ids = []
        for prompt in ("[call0] balance of 1234567890", "[call0] balance of 1234567890 again"):
            out = await chat.turn(prompt)
            expect(not out["errors"] and len(out["tool_results"]) == 1, "the balance came back", out)
            # MAF gives a function_call update per streamed piece of the arguments: all of one id
            expect({c["call_id"] for c in out["calls"]} == {out["tool_results"][0]["call_id"]},
                   "the call and its result under one id", out)
            ids.append(out["tool_results"][0]["call_id"])
        expect(ids[0] != ids[1], "the reused id was replaced", ids)
        after = await chat.turn("[plain] and now?")
        expect(not after["errors"] and after["text"] == "Still here.", "the next turn", after)
        return {"threadId": chat.thread_id, "ids": ids}
    finally:
        await chat.close()


async def frontend_tool():
    """A tool of MAF's own (run by its function invocation), which the model calls under an id the
    thread holds already (call_0): MAF runs it once, sends its result under the id it was given, and
    the model reads it; then a call cut at the model's length limit is one readable error."""
    from agent_framework import tool

    ran = []

    @tool
    def show_confetti(colour: str) -> str:
        """Celebrate in the user's browser with a burst of confetti"""
        ran.append(colour)
        return f"Confetti shown in {colour}"

    chat = Chat(tools=[show_confetti])
    try:
        await chat.turn("[call0] balance of 1234567890")  # takes call_0 on this thread
        out = await chat.turn("[call0] confetti please")
        expect(not out["errors"] and ran == ["blue"], "MAF ran its tool once", {"out": out, "ran": ran})
        expect(out["text"].endswith("Done: Confetti shown in blue"), "the model read its result", out)
        told = await chat.turn("[array] confetti with a list")
        expect(not told["errors"] and told["text"].startswith("Told: Error:"), "the model was told", told)
        expect(ran == ["blue"], "MAF did not run the refused call", ran)
        again = await chat.turn("[plain] and now?")
        expect(not again["errors"] and again["text"] == "Still here.", "the next turn", again)
        cut = await chat.turn("[cut] tell me everything")
        expect(len(cut["errors"]) == 1 and "length limit" in cut["errors"][0], "the cut answer: readable", cut)
        expect(ran == ["blue"], "the cut call was not run", ran)
        return {"threadId": chat.thread_id}
    finally:
        await chat.close()


CORE = (three_turns, server_tool, approval, errors, line_breaks)
SCENARIOS = {f.__name__: f for f in (*CORE, run_ends, ids_reused, frontend_tool)}


async def main(names):
    summary = {"ok": True, "scenarios": {}, "failures": []}
    for name in names:
        log(f"--- {name}")
        try:
            detail = await SCENARIOS[name]()
            summary["scenarios"][name] = {"status": "passed", **detail}
        except Exception as exc:  # report every scenario, then fail
            summary["ok"] = False
            summary["scenarios"][name] = {"status": "failed"}
            summary["failures"].append(f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}")
            log(traceback.format_exc())
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1].split(",") if len(sys.argv) > 1 else [f.__name__ for f in CORE])))
