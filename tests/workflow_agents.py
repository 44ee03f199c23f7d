"""Test-only agents for tests/integration/test_workflow_client.py, loaded by the stack's processes through
AGUI_EXTRA_AGENTS (and registered in the test process by the test itself).

`support_crash` is the support workflow with one change: refund_agent's lookup_order_details
can be held inside the tool, so that the test can SIGKILL the worker while a workflow step is
executing. The hold is a Redis flag per thread, set and cleared by the test; the tool tells the
test it is inside (a list push) before it waits, so nothing here is timing.
"""

from dataclasses import replace

from agents.catalog import support
from agents.runtime import events
from agents.runtime.workflows import Workflow

HOLD_SECONDS = 120  # far beyond the test: the worker is killed long before


def hold_key(thread_id):
    return f"agui:test:hold-lookup:{thread_id}"


def entered_key(thread_id):
    return f"agui:test:entered-lookup:{thread_id}"


def release_key(thread_id):
    return f"agui:test:release-lookup:{thread_id}"


def _held_lookup(ctx, order_id):
    client = events.redis_client()
    if client.get(hold_key(ctx.thread.pk)):
        client.rpush(entered_key(ctx.thread.pk), ctx.tool_call_id)
        client.blpop([release_key(ctx.thread.pk)], timeout=HOLD_SECONDS)
    return support.lookup_order_details.func(ctx, order_id)


lookup = replace(support.lookup_order_details, func=_held_lookup)
refund = replace(support.REFUND, tools=[lookup, support.submit_refund])
order = replace(support.ORDER, tools=[lookup, support.submit_replacement])

AGENT = Workflow(
    name="support_crash",
    title="Support (test: a lookup that can be held)",
    description=support.WORKFLOW.description,
    system_prompt="",
    participants=[support.TRIAGE, refund, order],
    handoffs=support.WORKFLOW.handoffs,
    start=support.WORKFLOW.start,
)
