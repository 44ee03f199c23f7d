"""A lean HTTP/1.1 client for the per-request figures: one kept-alive connection, asyncio streams.

httpx costs the bench's own process 3-4 ms per request here (a 404 timed 5.3 ms through it and
the peer's whole POST -> RUN_STARTED 5.2 ms), more than the servers it measures; this reads the
status line, the headers and the (chunked or sized) body straight off the socket, so what a
figure shows is the server. Used alike for this project and the peer.
"""

from __future__ import annotations

import asyncio
import json
import time


class HTTPError(RuntimeError):
    pass


class Connection:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.busy = False  # a response not read to its end: the next request takes a new connection

    @classmethod
    def for_url(cls, url: str) -> Connection:
        hostport = url.split("://", 1)[1].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        return cls(host, int(port))

    async def _open(self):
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def close(self):
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def _send(self, method: str, path: str, body: bytes, headers: dict) -> None:
        if self.busy:
            await self.close()
        self.busy = True
        await self._open()
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    async def _head(self) -> tuple[int, dict]:
        status_line = await self.reader.readline()
        if not status_line:
            raise HTTPError("connection closed before the response")
        status = int(status_line.split(None, 2)[1])
        headers = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        return status, headers

    async def _chunks(self, headers: dict):
        """The body's pieces as they arrive."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                data = await self.reader.readexactly(size)
                await self.reader.readexactly(2)
                yield data
        elif "content-length" in headers:
            n = int(headers["content-length"])
            if n:
                yield await self.reader.readexactly(n)
        else:  # until the server closes
            while data := await self.reader.read(65536):
                yield data
            await self.close()
        self.busy = False
        if headers.get("connection", "").lower() == "close":
            await self.close()

    async def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None):
        """(status, headers, body bytes)."""
        await self._send(method, path, body, headers or {})
        status, head = await self._head()
        data = b"".join([c async for c in self._chunks(head)])
        return status, head, data

    async def sse(self, path: str, payload: dict, headers: dict | None = None):
        """Yields (perf_counter, wall µs, event dict) for each `data:` frame of a POST, reading the
        response to its end (so the connection can carry the next request)."""
        await self._send("POST", path, json.dumps(payload).encode(),
                         {"Content-Type": "application/json", "Accept": "text/event-stream", **(headers or {})})
        status, head = await self._head()
        if status != 200:
            body = b"".join([c async for c in self._chunks(head)])
            raise HTTPError(f"POST {path} -> {status}: {body[:300]!r}")
        buf = b""
        async for chunk in self._chunks(head):
            now, wall = time.perf_counter(), time.time_ns() // 1000
            buf += chunk
            while b"\n\n" in buf:
                frame, buf = buf.split(b"\n\n", 1)
                for line in frame.split(b"\n"):
                    if line.startswith(b"data: "):
                        yield now, wall, json.loads(line[6:])
