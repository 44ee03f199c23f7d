"""A Daphne process compares its settings with the other processes' from its start, not only when
/healthz is asked: behind open-source nginx (no active health checks) a web process with another
setting served requests unseen, and nothing was logged. A clean stop takes its digests away at once
(a restarted web process or beat counted twice for a minute, failing ?require=settings after a deploy)."""

from __future__ import annotations

import socket
import time

import pytest
import redis

from tests.integration.agui_stack import ROOT, devstack

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_web_process_is_compared_from_its_start_and_leaves_when_it_stops(live_stack):
    client = redis.Redis.from_url(live_stack["env"]["REDIS_URL"])
    port = devstack.free_port()
    cmd = dict(devstack.stack_commands("127.0.0.1", str(port), "", pool="threads", concurrency="1"))["web"]
    env = {**live_stack["env"], "AGUI_MAX_RUNS_PER_HOUR": "5"}  # one shared setting another than the stack's
    child = devstack.spawn("web3", cmd, env=env, cwd=ROOT, log_path=live_stack["logs"] / "web3.log")
    key = f"agui:settings:web {socket.gethostname()}:{child.proc.pid}"
    try:
        deadline = time.monotonic() + 60
        while not client.exists(key):  # nobody asks this process anything: it writes of itself
            assert child.alive() and time.monotonic() < deadline, child.tail()
            time.sleep(0.1)
        # and it says so in its log, naming the setting (the stack's worker wrote its own digests)
        while "AGUI_MAX_RUNS_PER_HOUR" not in child.tail():
            assert time.monotonic() < deadline, child.tail()
            time.sleep(0.1)
        assert "disagree" in child.tail()
    finally:
        devstack.stop_children([child], timeout=10)
    assert child.proc.returncode is not None
    assert not client.exists(key), "a clean stop leaves its digests behind"
