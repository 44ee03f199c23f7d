"""The inbox WebSocket: low-rate notices (requested / decided / expired) for the groups one reviews."""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import notify
from .access import is_reviewer


class InboxConsumer(AsyncJsonWebsocketConsumer):
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

    async def inbox_notice(self, message):
        await self.send_json(message["notice"])
