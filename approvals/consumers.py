"""The inbox WebSocket: low-rate notices (requested / decided / expired) for the groups one reviews,
and presence: which reviewers have a request open ("rita is viewing"), so two don't decide at once.

Presence is the channel layer only, nothing stored: a page says {"type": "viewing", "id": ...}; its
consumer joins that request's viewers group and says "join"; each consumer already there answers
the newcomer directly with "here"; leaving (another id, null, or the socket closing) says "leave"."""

import hashlib
import re

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils.translation import gettext

from agui_project import jsoncheck
from agui_project.sockets import CLOSE_LOGGED_OUT, CLOSE_NOT_YOURS, SignedInSocket

from . import notify, selectors
from .access import is_reviewer

REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class InboxConsumer(SignedInSocket, AsyncJsonWebsocketConsumer):  # closes on logout
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.refuse(CLOSE_LOGGED_OUT)
            return
        self.targets = await self._targets(user)
        if self.targets is None:
            await self.refuse(CLOSE_NOT_YOURS)
            return
        for target in self.targets:
            await self.channel_layer.group_add(target, self.channel_name)
        await self.accept()

    @database_sync_to_async
    def _targets(self, user):
        if not is_reviewer(user):
            return None
        group_ids = list(user.groups.values_list("pk", flat=True))
        self._group_ids = frozenset(group_ids)  # what its standing compares with (sockets.SignedInSocket)
        targets = [notify.group_for_user(user.pk)]
        targets += [notify.group_for_approver_group(g) for g in group_ids]
        if user.is_staff:
            targets.append(notify.STAFF_GROUP)
        return targets

    def memberships(self):
        return [*super().memberships(), *(getattr(self, "targets", None) or [])]

    async def disconnect(self, code):
        await self._leave()
        for target in getattr(self, "targets", None) or []:
            await self.channel_layer.group_discard(target, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None):
        """{"type": "viewing", "id": <request id> | null}, or {"type": "ping"} (answered with a pong); a frame that is not a JSON object, or of
        another type, is answered, not a 1011 close."""
        msg, refused = jsoncheck.read_frame(text_data)
        if refused:
            await self.send_json(refused)
            return
        if msg.get("type") == "viewing":
            await self._view(msg.get("id"))
        elif msg.get("type") == "ping":  # a page asking whether its socket still reaches the server
            await self.send_json({"type": "pong", **({"ref": msg["ref"]} if "ref" in msg else {})})
        else:
            await self.send_json({"type": "error", "code": "unknown_type",
                                  "message": gettext("This socket takes frames of type viewing or ping.")})

    # --- presence

    viewing = None

    async def _view(self, approval_id):
        if approval_id == self.viewing:
            return
        await self._leave()
        if not isinstance(approval_id, str) or not REQUEST_ID.match(approval_id):
            return
        if not await self._may_see(approval_id):
            return
        self.viewing = approval_id
        group = notify.group_for_viewers(approval_id)
        await self.channel_layer.group_add(group, self.channel_name)
        await self.channel_layer.group_send(group, self._presence("join"))

    async def _leave(self):
        if self.viewing is None:
            return
        group = notify.group_for_viewers(self.viewing)
        await self.channel_layer.group_send(group, self._presence("leave"))
        await self.channel_layer.group_discard(group, self.channel_name)
        self.viewing = None

    def _presence(self, event):
        return {"type": "inbox.presence", "event": event, "id": self.viewing, "who": self.scope["user"].get_username(),
                "user_id": self.scope["user"].pk, "from": self.channel_name}

    @database_sync_to_async
    def _may_see(self, approval_id):
        return selectors.visible_requests(user=self.scope["user"]).filter(pk=approval_id).exists()

    async def inbox_presence(self, message):
        if message["from"] == self.channel_name or message["id"] != self.viewing:
            return
        if message["event"] == "join":  # tell the newcomer who is already here
            await self.channel_layer.send(message["from"], self._presence("here"))
        if message["user_id"] == self.scope["user"].pk:
            return  # the same reviewer in another tab is no collision
        await self.send_json({
            "type": "approval.viewers", "event": "leave" if message["event"] == "leave" else "join",
            "id": message["id"], "who": message["who"],
            # tells one tab from another without giving out channel names
            "key": hashlib.sha256(message["from"].encode()).hexdigest()[:12],
        })

    async def inbox_notice(self, message):
        notice = message["notice"]
        if notice.get("type") == "approval.gone" and self.viewing == (notice.get("approval") or {}).get("id") \
                and not await self._may_see(self.viewing):
            # routed away from the reviewer's groups (a policy change): they may no longer read it, nor
            # who else has it open; they joined its viewers when they still could
            await self._leave()
        await self.send_json(notice)
