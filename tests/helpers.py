"""Builders shared by tests: a paused transfer without running a model."""

from approvals import policy
from approvals import services as approval_services


def transfer_request(requester, amount=500.0, **overrides):
    """A pending transfer_money request routed to finance, as the runner would record it."""
    args = {"from_account": "1234567890", "to_account": "0987654321", "amount": amount, "currency": "USD"}
    args.update(overrides)
    verdict = policy.evaluate("transfer_money", args)
    return approval_services.request(
        tool_name="transfer_money", arguments=args, requester=requester, verdict=verdict,
        description=f"Transfer {amount:.2f} USD from 1234567890 to 0987654321", reason="asked to",
        thread_ref="t-test", run_ref="r-test", tool_call_ref="c-test",
    )
