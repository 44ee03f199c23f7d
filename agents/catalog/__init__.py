"""The demo agents. load_agents() runs at start-up and registers every tool with approvals."""

from approvals import registry

AGENTS = {}


def load_agents():
    if AGENTS:
        return AGENTS
    from .banking import AGENT as banking

    for agent in (banking,):
        AGENTS[agent.name] = agent
        for t in agent.tools:
            registry.register(t.defaults())
    return AGENTS


def get_agent(name):
    return load_agents().get(name)
