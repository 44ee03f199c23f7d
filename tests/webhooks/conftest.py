"""Fixtures of the webhook tests: a local receiver that records what it is sent (tests/webhooks/receiver.py)."""

import pytest

from tests.webhooks.receiver import Receiver


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()
