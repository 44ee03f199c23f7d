"""The thread WebSocket: snapshots on connect, then the thread's Redis Stream.

What is ready at once goes as one frame (DESIGN.md: each batch as one chunk): a single event is a
JSON object, several are a JSON array of them in order (the pages read both). With 500 sockets
on a thread, a frame's cost (Daphne's and each client's) is per frame, not per event: a burst of
events read together costs one frame per socket instead of one per event.
"""

import asyncio
import functools
import json
import logging
from urllib.parse import parse_qs

from ag_ui.core import MessagesSnapshotEvent, StateSnapshotEvent
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import OperationalError
from django.utils.translation import gettext

from agui_project import busy, daphne_frames, jsoncheck
from agui_project.sockets import CLOSE_LOGGED_OUT, CLOSE_NOT_YOURS, CLOSE_RETRY, REDIS_AWAY, SignedInSocket

from . import watching
from .agui import custom_events
from .models import Thread
from .runtime import events, notices, statesync
from .snapshots import thread_snapshot

log = logging.getLogger(__name__)
# a frame's events are cut here (a single larger event still goes, alone): a slow client's backlog
# of up to 500 entries is not one huge message
FRAME_MAX_CHARS = 256 * 1024


def frames(payloads, after=None):
    """Encoded events (JSON texts, in order) -> frame texts: one event as itself, several as an
    array, without decoding them again. With `after` (a socket opened with ?positions=1): each
    frame is {"after": the stream entry of its last event, "events": [...]}, so that the client
    can reconnect from there (?after=) instead of a snapshot and a replay of the live run; `after`
    gives each event's entry id, None for an event of a snapshot (its last frame alone says where
    the snapshot stands, `snapshot_at`)."""
    group, size, at = [], 0, None
    for i, payload in enumerate(payloads):
        if group and size + len(payload) > FRAME_MAX_CHARS:
            yield _frame(group, at, after is not None)
            group, size = [], 0
        group.append(payload)
        size += len(payload) + 1
        at = after[i] if after is not None else None
    if group:
        yield _frame(group, at, after is not None)


def _frame(group, at=None, positioned=False):
    if positioned:
        return '{"after":' + json.dumps(at) + ',"events":[' + ",".join(group) + "]}" if at else \
            '{"events":[' + ",".join(group) + "]}"
    return group[0] if len(group) == 1 else "[" + ",".join(group) + "]"


def batch_frames(batch, positioned=False):
    """frames() of a Batch, made once for all the sockets that read it (a shared read hands each
    the same Batch); each of the two forms once."""
    key = "positioned" if positioned else "frames"
    made = batch.memo.get(key)
    if made is None:
        payloads = [payload for _entry_id, payload in batch]
        made = batch.memo[key] = list(frames(payloads, [e for e, _p in batch] if positioned else None))
    return made


def prepared_frames(batch, positioned=False):
    """batch_frames() as autobahn's prepared messages, framed once for every Daphne socket
    (agui_project/daphne_frames.py)."""
    key = "prepared+" if positioned else "prepared"
    made = batch.memo.get(key)
    if made is None:
        made = batch.memo[key] = [daphne_frames.prepare(text) for text in batch_frames(batch, positioned)]
    return made


class ThreadConsumer(SignedInSocket, AsyncWebsocketConsumer):  # closes on logout
    pump = None  # the task reading the thread's stream for this socket
    positioned = False  # frames say their stream position (?positions=1: _positions)
    rest = None  # (batch, how many of its frames went) when one could not go straight to the socket

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.refuse(CLOSE_LOGGED_OUT)
            return
        self.thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        if not await self._owns_thread(user):
            await self.refuse(CLOSE_NOT_YOURS)
            return
        # Daphne's socket, written directly with frames prepared once for all its readers
        self.direct = daphne_frames.direct(self.base_send)
        await self.accept()
        self.watch = watching.Watch(self.thread_id)  # an abandoned run is not stopped while the chat is open
        await self.watch.renew()
        self.positioned, after = _positions(self.scope)
        self._start(after=after)

    @database_sync_to_async
    def _owns_thread(self, user):
        # no thread id holds a NUL (every way in refuses one), and PostgreSQL cannot even look one up
        return "\x00" not in self.thread_id and Thread.objects.filter(pk=self.thread_id, owner=user).exists()

    def _start(self, after):
        if self.pump:
            self.pump.cancel()
        self.pump = asyncio.create_task(self._pump(after))

    async def disconnect(self, code):
        if getattr(self, "pump", None):
            self.pump.cancel()
        if getattr(self, "watch", None):
            await self.watch.leave()

    async def receive(self, text_data=None, bytes_data=None):
        msg, refused = jsoncheck.read_frame(text_data)  # the HTTP bodies' gate; a bad frame is answered
        if refused:
            await self.send(json.dumps(refused))
            return
        if msg.get("type") == "ping":  # a page asking whether its socket still reaches the server
            await self.send(json.dumps({"type": "pong", **({"ref": msg["ref"]} if "ref" in msg else {})}))
        elif msg.get("type") == "resume":
            after = msg.get("after")
            if not events.is_entry_id(after):
                # Redis would refuse it (an error that is no outage): said to the client, the socket goes on
                await self.send(json.dumps({"type": "error", "code": "invalid_position", "message": gettext(
                    "A resume names the last stream entry the client saw, such as 1764000000000-0.")}))
                return
            self._start(after=after)  # resume from the last entry the client saw: no snapshot needed
        elif msg.get("type") == "state_patch":
            # accepted patches reach every socket of the thread (this one too) as STATE_DELTA on the stream
            try:
                reply = await database_sync_to_async(statesync.socket_patch)(self.thread_id, self.scope["user"], msg)
            except OperationalError as exc:
                if not busy.is_busy(exc):
                    raise
                # as over HTTP (503 + Retry-After): the patch was not applied, the socket stays open
                reply = {"type": "error", "code": "database_busy", "message": busy.message(),
                         "retryAfter": busy.RETRY_AFTER_SECONDS, **({"ref": msg["ref"]} if "ref" in msg else {})}
            await self.send(json.dumps(reply))
        else:  # said, not ignored: a client sending AG-UI's STATE_DELTA here heard nothing back
            await self.send(json.dumps({"type": "error", "code": "unknown_type", "message": gettext(
                "This socket takes frames of type resume, state_patch or ping."), **({"ref": msg["ref"]} if "ref" in msg else {})}))

    async def _pump(self, after):
        try:
            if after is not None and not await self._continues(after):
                after = None  # what followed it is gone, or it was never there: start over, as a new socket
            if after is None:
                after = await self._send_snapshot()
            while True:
                await self.watch.renew()
                if self.direct is not None:
                    after = await self._follow(after)
                    continue
                batch = await events.read(self.thread_id, after)
                if batch:
                    await self._send_batch(batch)
                    after = batch[-1][0]
        except asyncio.CancelledError:
            raise
        except REDIS_AWAY as exc:  # the page reconnects (with backoff) and gets a fresh snapshot
            await self.close_for_redis_away(exc)
        except Exception:  # not an outage: a bug, with its traceback; the page still reconnects
            log.exception("thread socket %s: stream read failed", self.thread_id)
            await self.close(code=CLOSE_RETRY)

    async def _continues(self, after):
        """Reading after `after` gives everything that followed it: the stream still holds it, and no
        notice for the thread was lost since (Redis away: agents/runtime/notices.py)."""
        return await events.continues_after(self.thread_id, after) and not await database_sync_to_async(
            notices.missed_since)(self.thread_id, after)

    async def _follow(self, after):
        """Daphne's socket: the thread's batches written to it by the shared reads as they arrive
        (events.follow), this task waking only to renew its watch, or once a frame could not go
        straight to the socket (it then sends the rest of that batch through the ASGI send).
        Returns the position reached; raises what a read raised."""
        follower = events.follow(self.thread_id, after, functools.partial(self._deliver, asyncio.current_task()))
        try:
            while not follower.ended.done():
                await asyncio.wait([follower.ended], timeout=events.BLOCK_MS / 1000)
                await self.watch.renew()
        finally:
            follower.stop()
        if follower.ended.result() is not None:
            raise follower.ended.result()
        if self.rest is not None:
            (batch, sent), self.rest = self.rest, None
            await self._send_batch(batch, sent)
        return follower.after

    def _deliver(self, pump, batch):
        """events.follow's deliver for `pump`: the batch's frames, prepared once for every socket of
        the read, straight to Daphne's socket. False (follow no more) when a resume replaced the
        pump (cancelled, it may not have left its read yet), or when a frame could not go straight
        (the socket closing, a frame over Daphne's limit): `rest` keeps what the pump sends then."""
        if pump is not self.pump:
            return False
        for sent, prepared in enumerate(prepared_frames(batch, self.positioned)):
            if not self.direct(prepared):
                self.rest = (batch, sent)
                return False
        return True

    async def _send_batch(self, batch, sent=0):
        """The batch's frames from the `sent`-th on, through the ASGI send (not Daphne, or Daphne
        would not send them straight)."""
        for text in batch_frames(batch, self.positioned)[sent:]:
            await self.send(text)

    async def _send_snapshot(self):
        """Snapshots from the database, then the active run replayed from its RUN_STARTED.

        The stream position is taken before the database is read, so nothing written in
        between is missed; replayed START events reset what the snapshot already showed.
        """
        position = await events.last_id(self.thread_id)
        snap = await database_sync_to_async(thread_snapshot)(self.thread_id)
        payloads = [events.encode(event) for event in (
            MessagesSnapshotEvent(messages=snap["messages"]),
            StateSnapshotEvent(snapshot=snap["state"]),
            snap["state_meta"],  # CUSTOM state_version, when there is a version or a prediction to tell
            # when each message was written, how each settled call ended (words for the person)
            custom_events.message_info(snap["message_info"]) if snap["message_info"] else None,
            custom_events.tool_outcomes(snap["tool_outcomes"]) if snap["tool_outcomes"] else None,
            custom_events.approvals(snap["approvals"]),
            # the agents' questions and the workflow's position (agents/runtime/workflows.py), when there are any
            custom_events.input_requests(snap["input_requests"]) if snap["input_requests"] else None,
            custom_events.workflow(snap["workflow"]) if snap["workflow"] else None,
            custom_events.run_error(snap["run_error"]) if snap["run_error"] else None,
        ) if event is not None]
        if snap["active_stream_id"]:
            for entry_id, payload in await events.range_from(self.thread_id, snap["active_stream_id"]):
                payloads.append(payload)
                position = max(position, entry_id, key=events.entry_key)
        at = [None] * (len(payloads) - 1) + [position] if self.positioned else None
        for text in frames(payloads, at):
            await self.send(text)
        return position


def _positions(scope):
    """(whether frames say their stream position, where to resume) from the socket's query string:
    ?positions=1, and ?after=<entry id> of the last frame a former socket of this client received
    (the pump then sends what followed it, or the snapshots when the stream no longer has that)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    positioned = query.get("positions") == ["1"]
    after = (query.get("after") or [None])[0]
    return positioned, after if positioned and after and events.is_entry_id(after) else None

