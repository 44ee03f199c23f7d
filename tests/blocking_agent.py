"""A test-only agent whose tools block until the test releases them (tests/integration/test_recovery.py).

A subprocess worker loads it through AGUI_EXTRA_AGENTS=tests.blocking_agent. Each call counts
itself in Redis (agui:test:<token>:calls) and announces its start (agui:test:<token>:started;
block_recorded first records its effect: agui:test:<token>:done);
only the first attempt blocks, on agui:test:<token>:release, so a retry finishes at once.
"""

import os

import redis
from django.conf import settings

from agents.catalog.agent import Agent
from agents.runtime.tools import NOT_DONE, tool


def keys(token):
    return {name: f"agui:test:{token}:{name}" for name in ("calls", "started", "release", "done")}


def _block(token, record=False):
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=150)  # above the BLPOP below
    k = keys(token)
    attempt = client.incr(k["calls"])
    if record:  # its effect and its record, at once: what a transfer's commit is to its Transfer row
        client.set(k["done"], attempt)
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


def _recorded(_tool_call_id, arguments):
    done = redis.Redis.from_url(settings.REDIS_URL).get(keys(arguments["token"])["done"])
    return f"finished attempt {done.decode()} (from its record)" if done else NOT_DONE


@tool(approval_mode="never", risk="low", reversible=False, outcome=_recorded)
def block_recorded(ctx, token: str):
    """Records its effect, then blocks until the test releases it (recovery reads the record)."""
    return _block(token, record=True)


AGENT = Agent(
    name="blocking",
    title="Blocking (tests)",
    description="Test-only tools that block while a worker is killed.",
    system_prompt="Test agent.",
    tools=[block, block_idempotent, block_recorded],
)


# A subprocess worker started with AGUI_TEST_HOLD_CONTINUATIONS=<token> stops inside every
# continuation task it receives, before the run is claimed: the test can SIGKILL it between a
# decision and its continuation (tests/integration/test_recovery.py). Nothing happens without the variable.
if os.environ.get("AGUI_TEST_HOLD_CONTINUATIONS"):
    from celery.signals import task_prerun

    @task_prerun.connect(weak=False)
    def _hold_continuations(task_id=None, task=None, args=None, **kwargs):
        from agents.models import Run

        if task.name != "agents.tasks.run_agent" or not Run.objects.filter(pk=args[0], parent_run__isnull=False).exists():
            return
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=150)
        k = keys(os.environ["AGUI_TEST_HOLD_CONTINUATIONS"])
        client.rpush(k["started"], args[0])
        client.blpop([k["release"]], timeout=120)
