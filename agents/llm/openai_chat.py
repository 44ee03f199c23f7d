"""The chat model behind an API key: the official OpenAI SDK (any OpenAI-compatible server)."""

import contextlib
import itertools
import json
import logging
import os
import queue
import threading

import openai
from django.conf import settings

from agui_project import jsoncheck

from .deltas import (
    AnswerCut,
    BrokenStream,
    ModelError,
    ModelUnavailable,
    NoAnswer,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)

log = logging.getLogger(__name__)

try:  # the HTTP library the SDK streams with (openai 3 moved to httpx2): its errors escape a raw stream
    import httpx2 as sdk_http
except ImportError:  # pragma: no cover - openai < 3
    import httpx as sdk_http


def as_given(messages, tools=None):
    """create()'s keyword arguments that send `messages` and `tools` as given, as extra_body. What
    create() is handed goes through the SDK's request transform first: a walk of the whole body
    against the params' TypedDicts, with the GIL held, that changes nothing of a chat request (its
    param types declare no aliases or formats): 2 ms for 4 messages, 48 ms for 100 on this
    machine, before a byte leaves (anthropic-sdk-python#1195, openai-python#3616). The JSON sent
    is the same (tests/agents/test_llm_stream.py compares it)."""
    return {"messages": [], "extra_body": {"messages": messages, **({"tools": tools} if tools else {})}}


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
        kwargs = {"model": self.name, "stream": True, **as_given(messages, tools)}
        answered = finished = said = calling = False
        reason, calls = None, _CallIndexes()
        try:
            # The SDK's own stream builds a pydantic model per chunk (300-600 us each, the worker's
            # main cost at thousands of chunks/s); the raw response keeps its request, retries and
            # status-error mapping, and a chunk is then one json.loads.
            with contextlib.ExitStack() as open_response:
                response = open_response.enter_context(
                    self._client().chat.completions.with_streaming_response.create(**kwargs))
                reads = response.http_response.iter_bytes()
                for data in sse_data(reads):
                    if data == "[DONE]":
                        finished = True
                        if response.http_response.http_version == "HTTP/1.1":
                            drain_later(reads, open_response.pop_all())
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError as exc:
                        raise BrokenStream(f"the model's stream held a chunk that is not JSON: {data[:80]!r}") from exc
                    if not isinstance(chunk, dict):
                        raise BrokenStream(f"the model's stream held a chunk that is not an object: {data[:80]!r}")
                    # a NUL or a lone surrogate ("\ud800") would poison the thread once stored: the
                    # strings taken are scrubbed (a pass over each delta; scanning the whole line for
                    # what could parse as one cost more than its json.loads)
                    clean = jsoncheck.scrub
                    if chunk.get("error"):
                        error = chunk["error"]
                        raise ModelError(error.get("message", error) if isinstance(error, dict) else error,
                                         code=error.get("code") or error.get("type") if isinstance(error, dict) else None)
                    choices = chunk.get("choices") or []
                    if not choices:
                        continue
                    answered = True
                    choice = choices[0]
                    if not isinstance(choice, dict) or not isinstance(choice.get("delta") or {}, dict):
                        raise BrokenStream(f"the model's stream held a choice that is not an object: {data[:80]!r}")
                    reason = choice.get("finish_reason") or reason
                    finished = finished or bool(reason)
                    delta = choice.get("delta") or {}
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if reasoning and isinstance(reasoning, str):
                        yield ReasoningDelta(clean(reasoning))
                    # a refusal (OpenAI's `refusal`, in place of content) is the answer the person reads
                    for words in (delta.get("content"), delta.get("refusal")):
                        if words:
                            said = True
                            yield TextDelta(clean(text_of(words, data)))
                    for tc in delta.get("tool_calls") or []:
                        if not isinstance(tc, dict) or not isinstance(tc.get("function") or {}, dict):
                            raise BrokenStream(f"the model's stream held a tool call that is not an object: {data[:80]!r}")
                        said = calling = True
                        fn = tc.get("function") or {}
                        call_id = tc.get("id") if isinstance(tc.get("id"), str) else None  # the runner gives one otherwise
                        yield ToolCallDelta(calls.index(tc), call_id, fn.get("name") and clean(str(fn["name"])),
                                            clean(arguments_of(fn.get("arguments"))))
        except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                openai.InternalServerError, sdk_http.TransportError) as exc:
            raise ModelUnavailable(str(exc) or type(exc).__name__) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise ModelUnavailable(str(exc)) from exc
            raise ModelError(str(exc), status=exc.status_code, code=exc.code or exc.type) from exc
        except openai.APIError as exc:
            raise ModelError(str(exc), code=exc.code or exc.type) from exc
        if not answered:  # a 200 with no choice at all is no answer, not an empty success
            raise NoAnswer("the model's stream ended without an answer")
        if not finished:  # neither [DONE] nor a finish_reason: the body stopped part-way
            raise ModelUnavailable("the model's stream was cut off before it finished")
        if reason == "length":  # the tokens ran out: a call's arguments end there (no call to run), text mid-word
            raise AnswerCut("the answer reached the model's length limit in the middle of a tool call, so no "
                            "tool was called" if calling else "the answer reached the model's length limit")
        if not said:  # no text, refusal or call (a content filter, or reasoning alone): the person heard nothing
            raise NoAnswer(f"the model's answer was empty (finish reason: {reason or 'none'})")


def text_of(content, data):
    """A delta's text: a string, or content parts (Mistral streams a list of them) of which the text
    parts are read; anything else is no answer the run can show."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "".join(p["text"] for p in content if p.get("type") == "text" and isinstance(p.get("text"), str))
    raise BrokenStream(f"the model's stream held content that is not text: {data[:80]!r}")


def arguments_of(arguments):
    """A tool call's arguments as JSON text: servers that decode them (an object, not its text) are
    read as if they had sent the text."""
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    return json.dumps(arguments, ensure_ascii=False)


class _CallIndexes:
    """Which of the answer's tool calls a tool-call delta continues. Servers that leave out `index`
    (OpenAI always sends it) give each new call its id: without this every call of such an answer
    ran together as the first one, its arguments `{...}{...}`."""

    def __init__(self):
        self.last, self.ids = -1, {}

    def index(self, tc):
        if isinstance(tc.get("index"), int):
            self.last = tc["index"]
        elif self.last < 0 or (tc.get("id") and self.ids.get(self.last) not in (None, tc["id"])):
            self.last += 1
        if tc.get("id"):
            self.ids.setdefault(self.last, tc["id"])
        return self.last


_drainer = None
_drainer_lock = threading.Lock()


def drain_later(lines, close):
    """Read the rest of a streamed answer after its [DONE] (to the body's end), then close it
    (`close`, an ExitStack), off the run's path. httpx puts a connection back in its pool only once
    its response was read to the end: closed part-read, the connection was closed and every model
    call opened another (a TCP and, with the real API, a TLS handshake). The SDK's async stream
    drains within 0.1 s for this; its sync stream does not drain. Here the run does not wait at
    all, and a server that never ends its body after [DONE] holds only the drainer (and the
    answers queued behind it, whose calls meanwhile open connections), until the read timeout."""
    global _drainer
    with _drainer_lock:
        if _drainer is None or _drainer.pid != os.getpid():  # a forked worker child has no thread
            _drainer = _Drainer()
    _drainer.queue.put((lines, close))


class _Drainer:
    def __init__(self):
        self.pid = os.getpid()
        self.queue = queue.SimpleQueue()
        threading.Thread(target=self._run, name="model-stream-drainer", daemon=True).start()

    def _run(self):
        while True:
            lines, close = self.queue.get()
            try:
                with close:
                    for _ in lines:
                        pass
            except Exception as exc:  # noqa: BLE001 - the answer was whole: only its connection is not kept
                log.debug("a model stream's end was not read: %r", exc)


def sse_data(reads):
    """The `data:` payload of each server-sent event in a body read as bytes (`reads`: its pieces
    as they arrive; multi-line data joined with newlines).

    Not the SDK's `iter_lines()`: it decodes every read to text and splits it with str.splitlines,
    which also ends a line at U+2028, U+2029 and U+0085 (NEL). JSON may carry those unescaped in a
    string (Python's json.dumps(ensure_ascii=False) does), so a model's answer holding one was cut
    into two lines, neither of them JSON. An event stream's lines end at CRLF, LF or CR only (the
    HTML standard's event-stream grammar); split there, the bytes are decoded a data line at a time
    (~0.5 µs of CPU a chunk less than through the text layers, of the worker's ~20 a streamed token)."""
    data, partial, after_cr, first = [], [], False, True
    # the body's end ends its last line and event as a blank line would (an event without one is kept)
    for chunk in itertools.chain(reads, (b"\n\n",)):
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF whose CR ended the last read
        after_cr = chunk.endswith(b"\r")
        if not chunk:
            continue
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, tail = chunk.split(b"\n")
        if lines and partial:  # a line begun in earlier reads (kept as pieces: joined once, when it ends)
            lines[0] = b"".join((*partial, lines[0]))
            partial = []
        if tail:
            partial.append(tail)
        if first and lines:  # the grammar lets a stream begin with a byte order mark
            lines[0], first = lines[0].removeprefix(_BOM), False
        for line in lines:
            if not line:
                if data:
                    yield "\n".join(data)
                    data = []
            elif line.startswith(b"data:"):
                data.append(line[6 if line.startswith(b"data: ") else 5:].decode("utf-8", "replace"))
            # event:, id:, retry: and ":" comments carry nothing a chat completion needs


_BOM = "\ufeff".encode()
