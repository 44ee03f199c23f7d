"""The benchmark's peer: Microsoft Agent Framework's AG-UI server with the banking tools.

Runs in .venv-maf (tests/maf_client/requirements.txt: agent-framework-ag-ui 1.7 needs
ag-ui-protocol<0.2, the project >=1.0), under one uvicorn worker, started by bench/run.py:

    PEER_MODEL_URL=http://127.0.0.1:<port>/v1 .venv-maf/bin/python bench/peer_app.py --port 0

prints "ready <url>" once it listens. The agent is MAF's own `Agent` on its OpenAI Chat
Completions client pointed at bench/fake_llm_server.py, with the three tools of
agents/catalog/banking.py under the same names and arguments (the fake model picks its reply by
tool name), the two that need approval as `approval_mode="always_require"`: MAF then ends the run
with an interrupt of reason `tool_call`, and a run whose `resume` answers it `approved` executes
the call. Accounts live in memory: the peer has no database, which is the point of comparing with
it (what the durable design costs on top of an in-process server).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Literal

from agent_framework import Agent, tool
from agent_framework.ag_ui import add_agent_framework_fastapi_endpoint
from agent_framework.openai import OpenAIChatCompletionClient
from fastapi import FastAPI
from pydantic import Field

CENTS = Decimal("0.01")
ACCOUNTS = {"1234567890": Decimal("5000.00"), "0987654321": Decimal("1200.00")}  # seed_demo's two
SUBSCRIPTIONS = {"sub_123": "active"}
AccountNumber = Annotated[str, Field(pattern=r"^\d{6,20}$", description="Account number, digits only")]


@tool(approval_mode="always_require")
def transfer_money(
    from_account: AccountNumber,
    to_account: AccountNumber,
    amount: Annotated[float, Field(gt=0, le=1_000_000, description="Amount to move")],
    currency: Annotated[Literal["USD", "EUR", "GBP"], Field(description="ISO currency code")] = "USD",
) -> str:
    """Transfer money from one account to another."""
    value = Decimal(str(amount)).quantize(CENTS, rounding=ROUND_HALF_UP)
    if from_account not in ACCOUNTS or to_account not in ACCOUNTS:
        return f"Error: unknown account {from_account if from_account not in ACCOUNTS else to_account}"
    if ACCOUNTS[from_account] < value:
        return f"Error: insufficient funds: {from_account} holds {ACCOUNTS[from_account]} {currency}"
    ACCOUNTS[from_account] -= value
    ACCOUNTS[to_account] += value
    return (f"Transferred {value} {currency} from {from_account} to {to_account}. "
            f"New balance of {from_account}: {ACCOUNTS[from_account]} {currency}.")


@tool(approval_mode="always_require")
def cancel_subscription(subscription_id: Annotated[str, Field(min_length=1, max_length=64)]) -> str:
    """Cancel one of the user's subscriptions."""
    if subscription_id not in SUBSCRIPTIONS:
        return f"Error: no subscription {subscription_id} belongs to you"
    SUBSCRIPTIONS[subscription_id] = "cancelled"
    return f"Subscription {subscription_id} is cancelled."


@tool(approval_mode="never_require")
def check_balance(account: AccountNumber) -> str:
    """Look up the balance of one of the user's accounts."""
    if account not in ACCOUNTS:
        return f"Error: account {account} is not yours"
    return f"Account {account} holds {ACCOUNTS[account]} USD."


def build_app(model_url: str) -> FastAPI:
    client = OpenAIChatCompletionClient(model="fake-model", api_key="bench-key", base_url=model_url)
    agent = Agent(
        name="banking",
        instructions=(
            "You are a careful banking assistant. Use the tools to act; never claim an action happened "
            "unless a tool result says so."
        ),
        client=client,
        tools=[transfer_money, cancel_subscription, check_balance],
    )
    app = FastAPI()
    # one principal for every caller: the bench's own client; no keep-alive comments in the measurements
    add_agent_framework_fastapi_endpoint(app, agent, "/agui/banking", single_user=True, keepalive_seconds=None)

    @app.get("/healthz")
    def healthz():
        return {"ok": True}

    return app


def main() -> int:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    app = build_app(os.environ["PEER_MODEL_URL"])
    sock = socket.socket()
    sock.bind(("127.0.0.1", args.port))
    print(f"ready http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, workers=1)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
