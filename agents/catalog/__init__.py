"""The demo agents and workflows, with their small domain models (a nested Django app); re-exports
only: the registry lives in agents/registry.py, start-up loading in loading.py."""

from ..registry import AGENTS, get_agent, register_agent
from .loading import load_agents

__all__ = ["AGENTS", "get_agent", "load_agents", "register_agent"]
