"""agents 0019: a gated call recorded before agents 0015 kept no agent, and the policy simulator replayed
it as the thread's workflow (a rule on `agent` then read it as "less review"); its request's agent
name is filled in. A call no one was asked about keeps ""."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("agents", "0018_column_defaults_in_the_database"), ("approvals", "0023_audit_connection_actions")]
AFTER = [("agents", "0019_toolcall_agent_from_requests")]


@pytest.mark.django_db(transaction=True)
def test_a_gated_call_takes_its_requests_agent_name(django_user_model):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        owner = old.get_model("auth", "User").objects.create(username="old-owner")
        thread = old.get_model("agents", "Thread").objects.create(id="t-old", owner_id=owner.pk, agent="support")
        run = old.get_model("agents", "Run").objects.create(id="r-old", thread=thread, status="succeeded")
        message = old.get_model("agents", "Message").objects.create(id="m-old", thread=thread, run=run, seq=1,
                                                                    role="assistant", content="")
        request = old.get_model("approvals", "ApprovalRequest").objects.create(
            id="req-old", tool_name="submit_refund", arguments={}, requester_id=owner.pk, description="refund",
            agent_name="refund_agent", tool_call_ref="c-gated")
        calls = old.get_model("agents", "ToolCall").objects
        for call_id, approval in (("c-gated", request.pk), ("c-free", ""), ("c-known", request.pk)):
            calls.create(id=call_id, run=run, thread=thread, message=message, name="submit_refund", arguments={},
                         status="succeeded", approval_id=approval, agent="support" if call_id == "c-known" else "")
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("agents", "ToolCall").objects
        assert dict(new.values_list("id", "agent")) == {"c-gated": "refund_agent", "c-free": "", "c-known": "support"}
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
