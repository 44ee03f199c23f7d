"""load_agents(): runs at start-up (AgentsConfig.ready) and registers every agent and its tools."""

from importlib import import_module

from django.conf import settings

from ..registry import AGENTS, register_agent

_loaded = False


def load_agents():
    global _loaded
    if _loaded:
        return AGENTS
    _loaded = True
    # imported here, not at the top: Django imports this package (an installed app) before the
    # models are ready, and these modules define and query models
    from . import banking, notes, ops, planner, recipe, support, writer

    # ops: sandboxed files, mail and commands; support: a workflow of three agents; notes: an MCP server's tools
    for module in (banking, recipe, planner, writer, support, ops, notes):
        register_agent(module.AGENT)
    for name in settings.AGUI_EXTRA_AGENTS:  # e.g. test-only agents in a subprocess worker
        register_agent(import_module(name).AGENT)
    return AGENTS
