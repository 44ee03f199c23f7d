"""Low-rate inbox notices over the channel layer (the token stream never goes this way)."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

STAFF_GROUP = "inbox.staff"


def group_for_approver_group(group_id):
    return f"inbox.group.{group_id}"


def group_for_user(user_id):
    return f"inbox.user.{user_id}"


def inbox_notice(kind, request):
    """kind: requested | decided | expired | cancelled. Never fails the caller."""
    payload = {
        "type": "inbox.notice",
        "notice": {
            "type": f"approval.{kind}",
            "approval": {
                "id": request.id,
                "status": request.status,
                "tool_name": request.tool_name,
                "description": request.description,
            },
        },
    }
    targets = {STAFF_GROUP, group_for_user(request.requester_id)}
    if request.approver_group_id:
        targets.add(group_for_approver_group(request.approver_group_id))
    layer = get_channel_layer()
    try:
        for target in targets:
            async_to_sync(layer.group_send)(target, payload)
    except Exception:  # the inbox refetches on reconnect; a lost notice loses no data
        log.exception("inbox notice %s for %s not sent", kind, request.id)
