"""A lean WebSocket client (RFC 6455) for the bench: an asyncio Protocol that parses frames as the
bytes arrive and stamps each message with the time it reached this process.

The fan-out scenario runs 500 clients on the two cores the stack uses, so each one's CPU per frame
is in the figure: this one costs 11-18 µs an event where the `websockets` library cost 17-27, and
a message is stamped when its bytes reach the process rather than when a reader gets to it. It
keeps to what the bench needs: receiving text and binary messages (fragments too), ping -> pong,
the close handshake.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import hashlib
import os
import struct
import time
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455, 1.3


class ConnectionClosed(RuntimeError):
    pass


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame: FIN set, masked (a client must mask every frame)."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
    return head + mask + masked


class WebSocket(asyncio.Protocol):
    def __init__(self):
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.handshake: asyncio.Future = asyncio.get_running_loop().create_future()
        self.messages: collections.deque = collections.deque()  # (perf_counter, wall µs, str | bytes)
        self.waiter: asyncio.Future | None = None
        self.fragments: list[bytes] = []
        self.fragment_opcode = 0
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self.close_code: int | None = None

    # -- asyncio.Protocol
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data: bytes):
        now, wall = time.perf_counter(), time.time_ns() // 1000
        self.buf += data
        if not self.handshake.done():
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if not sep:
                return
            self.buf = rest
            self.handshake.set_result(head.decode("latin-1"))
        self._parse((now, wall))

    def connection_lost(self, exc):
        if not self.handshake.done():
            self.handshake.set_exception(ConnectionClosed("closed during the handshake"))
        if not self.closed.done():
            self.closed.set_result(self.close_code)
        self._wake()

    # -- frames
    def _parse(self, stamp: tuple[float, int]):
        buf, pos, n = self.buf, 0, len(self.buf)
        while n - pos >= 2:
            b0, b1 = buf[pos], buf[pos + 1]
            length, at = b1 & 0x7F, pos + 2
            if length == 126:
                if n - at < 2:
                    break
                length, at = struct.unpack_from("!H", buf, at)[0], at + 2
            elif length == 127:
                if n - at < 8:
                    break
                length, at = struct.unpack_from("!Q", buf, at)[0], at + 8
            if b1 & 0x80:
                raise ConnectionClosed("the server masked a frame")
            if n - at < length:
                break
            payload, pos = buf[at:at + length], at + length
            self._frame(b0 & 0x80, b0 & 0x0F, payload, stamp)
        self.buf = buf[pos:]

    def _frame(self, fin, opcode, payload, stamp):
        if opcode == 0x8:
            self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
            if not self.transport.is_closing():
                self.transport.write(_frame(0x8, payload[:2]))
                self.transport.close()
            return
        if opcode == 0x9:
            self.transport.write(_frame(0xA, payload))
            return
        if opcode == 0xA:
            return
        if opcode in (0x1, 0x2):
            self.fragment_opcode = opcode
        self.fragments.append(payload)
        if not fin:
            return
        data = b"".join(self.fragments)
        self.fragments = []
        self.messages.append((*stamp, data.decode() if self.fragment_opcode == 0x1 else data))
        self._wake()

    def _wake(self):
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    # -- the bench's side
    async def recv_timed(self) -> tuple[float, int, str | bytes]:
        """(perf_counter and wall µs when it reached this process, message)."""
        while not self.messages:
            if self.closed.done():
                raise ConnectionClosed(f"closed ({self.close_code})")
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return self.messages.popleft()

    async def close(self, timeout=5.0):
        if not self.transport.is_closing():
            self.transport.write(_frame(0x8, struct.pack("!H", 1000)))
            try:  # the server answers with its close frame, then drops the connection
                await asyncio.wait_for(asyncio.shield(self.closed), timeout)
            except TimeoutError:
                pass
        self.transport.close()


@asynccontextmanager
async def connect(url: str, headers: dict | None = None, timeout=60.0):
    """`async with connect("ws://host:port/path", {...}) as sock`: `await sock.recv_timed()`."""
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    key = base64.b64encode(os.urandom(16)).decode()
    async with asyncio.timeout(timeout):
        _transport, sock = await loop.create_connection(WebSocket, parts.hostname, parts.port)
        lines = [f"GET {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = await sock.handshake
    status = head.split("\r\n", 1)[0]
    accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
    if status.split()[1:2] != ["101"] or accept not in head:
        sock.transport.close()
        raise ConnectionClosed(f"handshake refused: {status}")
    try:
        yield sock
    finally:
        await sock.close()
