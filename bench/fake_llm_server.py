"""The benchmark's model: tests/fake_llm.py's FakeLLM in its own process, streaming as fast as it can.

A user message `BENCH-STREAM <n>` is answered with n one-word chunks, as fast as the socket
takes them (`BENCH-STREAM <n> @<rate>`: paced at <rate> chunks per second); each word is the
wall-clock time (µs since the epoch) at which its chunk was written to the socket, so the
client can compute model chunk -> client event latency per chunk. Everything else is the offline
demo script (agents.llm.scripted_reply), one word per chunk.

    python bench/fake_llm_server.py --port 0   # prints "ready <base_url>" on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

# the offline demo script answers in the conversation's language (Django's translation), so this
# process sets Django up as the tests' in-process fake model has it
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")
django.setup()

from tests.fake_llm import FakeLLM, _Handler, default_responder, usage  # noqa: E402

STREAM = re.compile(r"BENCH-STREAM (\d+)(?: @(\d+))?")


def _last_user_text(body: dict) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            content = msg.get("content")
            return content if isinstance(content, str) else json.dumps(content)
        if msg.get("role") in ("tool", "assistant"):
            return ""
    return ""


def responder(body: dict) -> dict:
    match = STREAM.fullmatch(_last_user_text(body).strip())
    if match:
        return {"bench_words": int(match[1]), "rate": int(match[2] or 0)}
    return default_responder(body)


class BenchHandler(_Handler):
    def _stream(self, reply: dict, model: str, delay: float, body: dict) -> None:
        words = reply.get("bench_words")
        if not words:
            return super()._stream(reply, model, delay, body)
        # the same chunk objects FakeLLM builds, but each word stamped at the moment it is sent
        template = self.llm.chunks({"text": "x"}, model)
        head, piece, tail = template[0], template[1], template[-1]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        write = self.wfile.write

        def send(obj) -> None:
            data = (obj if isinstance(obj, str) else f"data: {json.dumps(obj)}\n\n").encode()
            write(b"%x\r\n%s\r\n" % (len(data), data))

        send(head)
        choice = piece["choices"][0]
        rate, start = reply.get("rate") or 0, time.monotonic()
        for i in range(words):
            if rate:  # paced: chunk i leaves at start + i/rate, like a (very fast) real model
                wait = start + i / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            choice["delta"] = {"content": f"{time.time_ns() // 1000} "}
            send(piece)
            self.wfile.flush()
        send(tail)
        if (body.get("stream_options") or {}).get("include_usage"):
            send({**tail, "choices": [], "usage": usage()})
        send("data: [DONE]\n\n")
        write(b"0\r\n\r\n")
        self.wfile.flush()


class BenchLLM(FakeLLM):
    def start(self) -> BenchLLM:
        fake = self

        class Handler(BenchHandler):
            llm = fake

        self._server = ThreadingHTTPServer(self._addr, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    llm = BenchLLM(port=args.port)
    llm.responder = responder
    llm.text_chunk_words = 1  # one word per chunk: as many model chunks as a real token stream
    llm.start()
    print(f"ready {llm.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
