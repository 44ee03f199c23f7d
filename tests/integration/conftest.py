"""The live stack and the official client's fixtures, for every test of real clients (agui_stack.py)."""

from tests.integration.agui_stack import live_stack, live_stack_env, node  # noqa: F401
