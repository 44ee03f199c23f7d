"""Which agents exist, by name, and which loop runs each kind of agent.

Filled at start-up (AgentsConfig.ready loads agents.catalog, which registers its agents; the
workflow runner registers its loop). It imports no agent and no runner, so the runtime can ask
for an agent without importing the catalog that is built on top of the runtime.
"""

from approvals import registry as tool_registry

AGENTS = {}
TOOLS = {}  # tool name -> the Tool (its describe() words an edited call's card)
_LOOPS = {}  # agent class -> the Runner class that runs agents of that class


def register_agent(agent):
    """Add an agent and register its tools' code defaults (policy rules are validated here)."""
    AGENTS[agent.name] = agent
    tool_registry.register_agent_name(agent.name)
    for t in agent.tools:
        tool_registry.register(t.defaults())
        TOOLS.setdefault(t.name, t)
    return agent


def get_agent(name):
    return AGENTS.get(name)


def get_tool(name):
    return TOOLS.get(name)


def register_loop(agent_class, runner_class):
    _LOOPS[agent_class] = runner_class
    return runner_class


def loop_for(agent, default):
    """The Runner class for this agent: the one registered for its class (or a base), else `default`."""
    for cls in type(agent).__mro__:
        if cls in _LOOPS:
            return _LOOPS[cls]
    return default
