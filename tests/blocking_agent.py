"""A test-only agent whose tools block until the test releases them (tests/test_recovery.py).

A subprocess worker loads it through AGUI_EXTRA_AGENTS=tests.blocking_agent. Each call counts
itself in Redis (agui:test:<token>:calls) and announces its start (agui:test:<token>:started);
only the first attempt blocks, on agui:test:<token>:release, so a retry finishes at once.
"""

import redis
from django.conf import settings

from agents.catalog.agent import Agent
from agents.tools import tool


def keys(token):
    return {name: f"agui:test:{token}:{name}" for name in ("calls", "started", "release")}


def _block(token):
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=150)  # above the BLPOP below
    k = keys(token)
    attempt = client.incr(k["calls"])
    client.rpush(k["started"], attempt)
    if attempt == 1:
        client.blpop([k["release"]], timeout=120)
    return f"finished attempt {attempt}"


@tool(approval_mode="never", risk="low", reversible=False)
def block(ctx, token: str):
    """Blocks until the test releases it (not idempotent)."""
    return _block(token)


@tool(approval_mode="never", risk="low", reversible=True, idempotent=True)
def block_idempotent(ctx, token: str):
    """Blocks until the test releases it (idempotent: safe to run again)."""
    return _block(token)


AGENT = Agent(
    name="blocking",
    title="Blocking (tests)",
    description="Test-only tools that block while a worker is killed.",
    system_prompt="Test agent.",
    tools=[block, block_idempotent],
)
