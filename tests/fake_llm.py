"""A scripted OpenAI-compatible chat-completions server for tests.

Driven through the real `openai` client, so tests exercise the same SSE parsing, chunk
assembly and error mapping as production:

    with FakeLLM() as llm:
        llm.push({"text": "Hello there"}, {"tool_calls": [{"id": "c1", "name": "f", "arguments": "{}"}]})
        client = OpenAI(base_url=llm.base_url, api_key="test", max_retries=0)

Reply (a dict, every key optional; a plain string is shorthand for {"text": ...}):
    text        assistant text, streamed in pieces of `text_chunk_words` words
    reasoning   the model's reasoning before the answer, streamed like text as `reasoning_content`
                deltas (DeepSeek, vLLM); with reasoning_field "reasoning", as `reasoning` (OpenRouter)
    tool_calls  [{"id", "name", "arguments" (JSON text)}], arguments streamed ~8 chars a delta
    error       HTTP status to answer with an OpenAI-style error body (message: error_message, code: error_code)
    cut         stream: close the connection after half the chunks, no [DONE] (an incomplete
                chunked body: openai raises APIConnectionError while iterating);
                non-stream: close without an answer (APIConnectionError too)
    no_done     stream: end the body properly but send no `data: [DONE]`
    delay       seconds to sleep before each chunk (non-stream: once)
    end_after   stream: a threading.Event the body's end (its last chunk) waits for, after [DONE]
    raw_unicode stream: JSON with non-ASCII characters as UTF-8, not \\u escapes (JSON allows both):
                U+2028, U+2029 and U+0085 then appear as they are inside a data line
    line_end    stream: what ends each line of the event stream, "\\n" (default), "\\r\\n" or "\\r"
    finish      stream: the last chunk's finish_reason ("length": cut at the model's limit); default
                "tool_calls" with calls, else "stop"
Queued replies are used in order; with the queue empty, `responder(request_json)` decides
(default: agents.llm.scripted_reply, the offline demo model).

Like the real API, a request whose `messages` OpenAI would refuse (see `invalid_messages`) is
answered 400 before any reply is used, so every test that drives a model proves the product
sends valid conversations; refused requests land in `rejected`, not in `requests`.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"


def default_responder(body: dict) -> dict:
    from agents.llm import scripted_reply  # lazy: the fake must import without Django set up

    return scripted_reply(body["messages"], body.get("tools") or [])


ROLES = ("system", "developer", "user", "assistant", "tool", "function")
MAX_TOOLS = 128  # OpenAI's chat completions take at most this many tools
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def invalid_tools(tools) -> tuple[str, str, str] | None:
    """(message, param, code) of the 400 OpenAI answers to these tools, or None: their number and
    their names, in its own words."""
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "Invalid type for 'tools': expected an array.", "tools", "invalid_type"
    if len(tools) > MAX_TOOLS:
        return (f"Invalid 'tools': array too long. Expected an array with maximum length {MAX_TOOLS}, but got an "
                f"array with length {len(tools)} instead.", "tools", "array_above_max_length")
    for i, spec in enumerate(tools):
        name = ((spec or {}).get("function") or {}).get("name") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            return (f"Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that "
                    "matches the pattern '^[a-zA-Z0-9_-]+$'.", f"tools[{i}].function.name", "invalid_value")
    return None


def invalid_messages(messages) -> tuple[str, str] | None:
    """(message, param) of the 400 OpenAI's chat completions API answers to these messages, or
    None. Only the refusals the product could plausibly provoke, with OpenAI's own texts
    (including its spelling "preceeding")."""
    if not isinstance(messages, list):
        return "Invalid type for 'messages': expected an array.", "messages"
    pending: dict[str, int] = {}  # tool_call_id -> index of the assistant message that made it
    answerable: set[str] = set()  # ids the current run of tool messages may answer
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ROLES:
            supported = ", ".join(f"'{r}'" for r in ROLES[:-1]) + f", and '{ROLES[-1]}'"
            return f"Invalid value: {role!r}. Supported values are: {supported}.", f"messages.[{i}].role"
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not call_id:
                return f"Missing required parameter: 'messages.[{i}].tool_call_id'.", f"messages.[{i}].tool_call_id"
            if call_id not in answerable:
                return ("Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'."), f"messages.[{i}].role"
            pending.pop(call_id, None)
            continue
        if pending:
            return unanswered(pending), f"messages.[{i}].role"
        answerable = set()
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if msg.get("content") is None and not calls and not msg.get("function_call"):
                return "Invalid value for 'content': expected a string, got null.", f"messages.[{i}].content"
            answerable = {c.get("id") for c in calls if isinstance(c, dict)}
            pending = dict.fromkeys(answerable, i)
        if role == "user" and isinstance(msg.get("content"), list):
            refused = invalid_parts(msg["content"], i)
            if refused:
                return refused
    if pending:
        return unanswered(pending), f"messages.[{min(pending.values())}].role"
    return None


PART_TYPES = ("text", "image_url", "input_audio", "refusal", "audio", "file")


def invalid_parts(parts: list, i: int) -> tuple[str, str] | None:
    """OpenAI's 400 for a user message's content parts: known types, text a string, an image a
    http(s) URL or a base64 data URL of an image type."""
    for j, part in enumerate(parts):
        where = f"messages[{i}].content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in PART_TYPES:
            supported = ", ".join(f"'{t}'" for t in PART_TYPES[:-1]) + f", and '{PART_TYPES[-1]}'"
            return f"Invalid value: {kind!r}. Supported values are: {supported}.", f"{where}.type"
        if kind == "text" and not isinstance(part.get("text"), str):
            return f"Missing required parameter: '{where}.text'.", f"{where}.text"
        if kind == "image_url":
            url = (part.get("image_url") or {}).get("url")
            if not isinstance(url, str):
                return f"Missing required parameter: '{where}.image_url.url'.", f"{where}.image_url.url"
            if not (url.startswith(("https://", "http://")) or re.match(r"data:image/[a-z]+;base64,[A-Za-z0-9+/]+=*$", url)):
                return (f"Invalid '{where}.image_url.url'. Expected a base64-encoded data URL with an image MIME "
                        "type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), or an http(s) URL."), \
                    f"{where}.image_url.url"
    return None


def unanswered(pending: dict) -> str:
    return ("An assistant message with 'tool_calls' must be followed by tool messages responding "
            "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
            + ", ".join(pending))


def split_words(text: str, n: int) -> list[str]:
    """Pieces of about n words whose concatenation is exactly `text`."""
    tokens = re.findall(r"\s*\S+\s*", text) or [text]
    if "".join(tokens) != text:  # whitespace-only text
        tokens = [text]
    return ["".join(tokens[i:i + n]) for i in range(0, len(tokens), n)]


def split_chars(text: str, n: int) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)] or [""]


class FakeLLM:
    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._addr = (host, port)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.requests: list[dict] = []
        self.rejected: list[tuple[dict, str]] = []  # (request, error message) answered 400
        self.streams_ended = 0  # streamed bodies whose end (last chunk) was sent
        self._queue: deque = deque()
        self.reset()

    # ------------------------------------------------------------ control
    def reset(self) -> None:
        """Back to the initial script: no queued replies, no recorded requests, default
        responder and chunking (call between tests when the server is shared)."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.rejected.clear()
            self.streams_ended = 0
        self.responder = default_responder
        self.text_chunk_words = 3
        self.args_chunk_chars = 8

    def push(self, *replies) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(body)
            reply = self._queue.popleft() if self._queue else None
        if reply is None:
            reply = self.responder(body)
        return {"text": reply} if isinstance(reply, str) else dict(reply or {})

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeLLM:
        fake = self

        class Handler(_Handler):
            llm = fake

        self._server = ThreadingHTTPServer(self._addr, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------ responses
    def chunks(self, reply: dict, model: str) -> list[dict]:
        """The `chat.completion.chunk` objects OpenAI would stream for this reply."""
        cid, created = "chatcmpl-" + uuid.uuid4().hex[:24], int(time.time())

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return {"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": model, "system_fingerprint": "fp_fake",
                    "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                 "finish_reason": finish}]}

        out: list[dict] = []
        text, calls = reply.get("text"), reply.get("tool_calls") or []
        if reply.get("reasoning"):  # like DeepSeek: the reasoning streams first, content null
            field = reply.get("reasoning_field") or "reasoning_content"
            out.append(chunk({"role": "assistant", "content": None, field: ""}))
            out += [chunk({"content": None, field: p}) for p in split_words(reply["reasoning"], self.text_chunk_words)]
        if text:  # like OpenAI: role with empty content first, then the pieces
            if not out:
                out.append(chunk({"role": "assistant", "content": "", "refusal": None}))
            out += [chunk({"content": p}) for p in split_words(text, self.text_chunk_words)]
        for i, call in enumerate(calls):
            head = {"index": i, "id": call.get("id") or f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function", "function": {"name": call["name"], "arguments": ""}}
            delta = {"tool_calls": [head]}
            if not out:  # tool calls only: the role rides on the first tool-call delta
                delta = {"role": "assistant", "content": None, **delta}
            out.append(chunk(delta))
            out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                    for p in split_chars(call.get("arguments") or "", self.args_chunk_chars)]
        if not out:
            out.append(chunk({"role": "assistant", "content": ""}))
        out.append(chunk({}, reply.get("finish") or ("tool_calls" if calls else "stop")))
        return out

    @staticmethod
    def completion(reply: dict, model: str) -> dict:
        calls = reply.get("tool_calls") or []
        message = {"role": "assistant", "content": reply.get("text"), "refusal": None}
        if calls:
            message["tool_calls"] = [
                {"id": c.get("id") or f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                 "function": {"name": c["name"], "arguments": c.get("arguments") or ""}}
                for c in calls]
        return {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion",
                "created": int(time.time()), "model": model, "system_fingerprint": "fp_fake",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": usage()}


def usage() -> dict:
    return {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}


ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive like the real API; streams use chunked encoding
    # each chunk goes when written, as a streaming API sends it: with Nagle's algorithm a chunk
    # waited for the client's (delayed, up to 40 ms) ACK of the one before on a kept-alive connection
    disable_nagle_algorithm = True
    llm: FakeLLM

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _json(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        self._json(status, {"error": {"message": message,
                                      "type": ERROR_TYPES.get(status, "server_error"),
                                      "param": param, "code": code}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake-llm"}]})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._error(404, f"no route {self.path}")
        invalid = invalid_messages(body.get("messages")) or invalid_tools(body.get("tools"))
        if invalid:  # refused before any queued reply is used, as the real API would
            with self.llm._lock:
                self.llm.rejected.append((body, invalid[0]))
            return self._error(400, *invalid)
        try:
            reply = self.llm._next_reply(body)
        except Exception as e:  # a broken responder should fail the test visibly, not hang it
            return self._error(500, f"fake-llm responder raised {e!r}")
        model, delay = body.get("model") or MODEL, float(reply.get("delay") or 0)
        if reply.get("error"):
            return self._error(int(reply["error"]), reply.get("error_message") or "fake error",
                               code=reply.get("error_code"))
        try:
            if body.get("stream"):
                self._stream(reply, model, delay, body)
            elif reply.get("cut"):
                time.sleep(delay)
                self.close_connection = True
            else:
                time.sleep(delay)
                self._json(200, FakeLLM.completion(reply, model))
        except (BrokenPipeError, ConnectionResetError):  # the client went away (cancel)
            self.close_connection = True

    def _stream(self, reply: dict, model: str, delay: float, body: dict) -> None:
        chunks = self.llm.chunks(reply, model)
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**chunks[-1], "choices": [], "usage": usage()})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        ascii_only, end = not reply.get("raw_unicode"), reply.get("line_end") or "\n"
        frames = [f"data: {json.dumps(c, ensure_ascii=ascii_only)}{end}{end}" for c in chunks] + \
            ([] if reply.get("no_done") else [f"data: [DONE]{end}{end}"])
        if reply.get("cut"):
            frames = frames[:max(1, len(chunks) // 2)]
        for frame in frames:
            if delay:
                time.sleep(delay)
            data = frame.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if reply.get("cut"):  # no terminating chunk: the body is visibly incomplete
            self.close_connection = True
            return
        if reply.get("end_after") is not None:
            reply["end_after"].wait(30)
        with self.llm._lock:  # counted before it is sent: a client that has read it finds it counted
            self.llm.streams_ended += 1
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
