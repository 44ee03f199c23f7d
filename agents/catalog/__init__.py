"""The demo agents. load_agents() runs at start-up and registers every tool with approvals."""

from approvals import registry

AGENTS = {}
_loaded = False


def register_agent(agent):
    """Add an agent and register its tools' code defaults (policy rules are validated here)."""
    AGENTS[agent.name] = agent
    for t in agent.tools:
        registry.register(t.defaults())
    return agent


def load_agents():
    global _loaded
    if _loaded:
        return AGENTS
    _loaded = True
    from importlib import import_module

    from django.conf import settings

    from .banking import AGENT as banking
    from .ops import AGENT as ops  # seed 003: sandboxed files, mail and commands
    from .planner import AGENT as planner
    from .recipe import AGENT as recipe
    from .support import AGENT as support  # a workflow of three agents (agents/workflows.py)
    from .writer import AGENT as writer

    for agent in (banking, recipe, planner, writer, support, ops):
        register_agent(agent)
    for module in settings.AGUI_EXTRA_AGENTS:  # e.g. test-only agents in a subprocess worker
        register_agent(import_module(module).AGENT)
    return AGENTS


def get_agent(name):
    return load_agents().get(name)
