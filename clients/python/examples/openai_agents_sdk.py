"""An OpenAI Agents SDK agent whose `refund` tool waits for a person's approval in agui-inbox.

    pip install openai-agents ./clients/python
    AGUI_INBOX_URL=http://127.0.0.1:8000 AGUI_INBOX_TOKEN=... OPENAI_API_KEY=... python openai_agents_sdk.py

The approval lives in the inbox, not in this process: if the script stops while a reviewer
thinks, nothing runs unapproved. The decorator makes a new Idempotency-Key for each call, so a run
started again asks anew; to pick the first request up instead, ask with
`inbox.request(..., idempotency_key=<a key of your own, kept across runs>)` and `approval.wait()`.
"""

import os

from agui_inbox_client import Inbox, NotApproved, require_approval

from agents import Agent, Runner, function_tool

inbox = Inbox(os.environ.get("AGUI_INBOX_URL", "http://127.0.0.1:8000"), os.environ["AGUI_INBOX_TOKEN"])

REFUND_SCHEMA = {"type": "object", "required": ["order", "amount"], "additionalProperties": False,
                 "properties": {"order": {"type": "string"}, "amount": {"type": "number", "exclusiveMinimum": 0}}}


@require_approval("shop.refund", inbox=inbox, schema=REFUND_SCHEMA, timeout=3600,
                  describe=lambda order, amount: f"Refund {amount:.2f} EUR on order {order}")
def refund(order: str, amount: float) -> str:
    return f"refunded {amount:.2f} EUR on order {order}"  # your real refund call goes here


@function_tool
def refund_tool(order: str, amount: float) -> str:
    """Refund an amount on an order (a person approves it first)."""
    try:
        return refund(order=order, amount=amount)
    except NotApproved as no:  # the model reads why, and does not try the same again
        return f"The refund was {no.status}. Reviewer: {no.feedback or 'no reason given'}"


agent = Agent(name="Support", instructions="You help customers with refunds.", tools=[refund_tool])

if __name__ == "__main__":
    print(Runner.run_sync(agent, "Please refund 25 EUR on order 12345.").final_output)
