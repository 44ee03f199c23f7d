"""Inbox notices leave from a background loop: the caller does not wait for Redis, and a process
that exits right after a decision (a management command, a script) still sends what it queued."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from approvals import notify

ROOT = Path(__file__).resolve().parents[2]


async def _subscribe(group):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return layer, channel


async def _receive(layer, channel, timeout=10):
    import asyncio

    return await asyncio.wait_for(layer.receive(channel), timeout)


def test_a_notice_is_sent_in_the_background_in_order():
    layer, channel = async_to_sync(_subscribe)(notify.STAFF_GROUP)
    futures = [notify.operator_notice("test.notice", {"n": i}) for i in range(20)]
    for future in futures:
        future.result(timeout=10)
    got = [async_to_sync(_receive)(layer, channel)["notice"]["n"] for _ in range(20)]
    assert got == list(range(20))  # a `decided` must never overtake its `requested`


@pytest.mark.slow
def test_a_process_that_exits_at_once_still_sends_its_notices():
    layer, channel = async_to_sync(_subscribe)(notify.STAFF_GROUP)
    code = "from approvals import notify; notify.operator_notice('test.exit', {'from': 'a short-lived process'})"
    env = {**os.environ, "REDIS_URL": settings.REDIS_URL, "DJANGO_SETTINGS_MODULE": "agui_project.settings"}
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    message = async_to_sync(_receive)(layer, channel)
    assert message["notice"] == {"type": "test.exit", "from": "a short-lived process"}
