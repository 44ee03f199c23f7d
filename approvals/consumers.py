"""The inbox WebSocket: low-rate notices (requested / decided / expired) for the groups one reviews."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from agui_project import jsoncheck
from agui_project.sockets import SignedInSocket

from . import notify
from .access import is_reviewer


class InboxConsumer(SignedInSocket, AsyncJsonWebsocketConsumer):  # closes on logout
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.targets = await self._targets(user)
        if self.targets is None:
            await self.close(code=4403)
            return
        for target in self.targets:
            await self.channel_layer.group_add(target, self.channel_name)
        await self.accept()

    @database_sync_to_async
    def _targets(self, user):
        if not is_reviewer(user):
            return None
        targets = [notify.group_for_user(user.pk)]
        targets += [notify.group_for_approver_group(g) for g in user.groups.values_list("pk", flat=True)]
        if user.is_staff:
            targets.append(notify.STAFF_GROUP)
        return targets

    async def disconnect(self, code):
        for target in getattr(self, "targets", None) or []:
            await self.channel_layer.group_discard(target, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None):
        """The inbox takes no frames; one that is not a JSON object is answered, not a 1011 close."""
        _msg, refused = jsoncheck.read_frame(text_data)
        if refused:
            await self.send_json(refused)

    async def inbox_notice(self, message):
        await self.send_json(message["notice"])
