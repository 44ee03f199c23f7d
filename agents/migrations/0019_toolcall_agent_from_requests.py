"""The calls recorded before agents 0015 kept no agent, and the policy simulator replays them as the
thread's (a workflow's name, not the participant that made the call): a draft's rule on `agent` read
an old gated refund of refund_agent as "less review". A gated call's request names its agent: that
name is filled in. A call no one was asked about keeps "" (nothing recorded it)."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def from_requests(apps, schema_editor):
    ToolCall = apps.get_model("agents", "ToolCall")
    ApprovalRequest = apps.get_model("approvals", "ApprovalRequest")
    named = ApprovalRequest.objects.filter(pk=OuterRef("approval_id")).exclude(agent_name="").values("agent_name")[:1]
    ToolCall.objects.filter(agent="").exclude(approval_id="").filter(
        approval_id__in=ApprovalRequest.objects.exclude(agent_name="").values("pk")).update(agent=Subquery(named))


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0018_column_defaults_in_the_database"),
        ("approvals", "0023_audit_connection_actions"),
    ]

    operations = [migrations.RunPython(from_requests, migrations.RunPython.noop, elidable=True)]
