"""Fixtures the agents' tests share (token_headers lives with the AG-UI endpoint's tests)."""

from tests.agents.test_agui import token_headers  # noqa: F401
