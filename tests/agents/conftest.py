"""Fixtures the agents' tests share (token_headers lives with the AG-UI endpoint's tests, bearer
with its input tests)."""

from tests.agents.test_agui import token_headers  # noqa: F401
from tests.agents.test_agui_inputs import bearer  # noqa: F401
