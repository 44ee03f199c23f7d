"""Fixtures the agents' tests share (token_headers lives with the AG-UI endpoint's tests, bearer
with its input tests)."""

import pytest

from tests.agents.test_agui import token_headers  # noqa: F401
from tests.agents.test_agui_inputs import bearer  # noqa: F401
from tests.helpers import finance_decides_transfers


@pytest.fixture
def transfers_to_finance(monkeypatch, demo):
    """Runs wait for the test to execute them (tests.helpers.run_here), and finance decides every
    transfer (a policy row, whatever the tool's code defaults say)."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    finance_decides_transfers(demo["admin"])
