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


def _send(targets, notice):
    layer = get_channel_layer()
    try:
        for target in targets:
            async_to_sync(layer.group_send)(target, {"type": "inbox.notice", "notice": notice})
    except Exception:  # the inbox refetches on reconnect; a lost notice loses no data
        log.exception("inbox notice %s not sent", notice.get("type"))


def inbox_notice(kind, request):
    """kind: requested | decided | expired | cancelled | reminded | escalated. Never fails the caller."""
    notice = {
        "type": f"approval.{kind}",
        "approval": {
            "id": request.id,
            "status": request.status,
            "tool_name": request.tool_name,
            "description": request.description,
            "expires_at": request.expires_at.isoformat() if request.expires_at else None,
            "escalated": request.escalated_at is not None,
        },
    }
    targets = {STAFF_GROUP, group_for_user(request.requester_id)}
    if request.approver_group_id:
        targets.add(group_for_approver_group(request.approver_group_id))
    if request.escalation_group_id and request.escalated_at:
        targets.add(group_for_approver_group(request.escalation_group_id))
    _send(sorted(targets), notice)


def operator_notice(kind, payload):
    """A notice for operators (staff), e.g. a tool call whose outcome is unknown."""
    _send([STAFF_GROUP], {"type": kind, **payload})
