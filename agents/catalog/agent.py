from dataclasses import dataclass, field

from agents.mcp_servers import catalog as mcp_catalog

from .confirmation import ConfirmationStrategy, DefaultConfirmationStrategy


@dataclass
class Agent:
    name: str
    title: str
    description: str
    system_prompt: str
    tools: list = field(default_factory=list)
    state_schema: dict | None = None  # JSON Schema of the thread's shared state (checked with jsonschema)
    predict_state_config: dict | None = None  # {state_key: {"tool": name, "tool_argument": name | "*"}}
    confirmation_strategy: ConfirmationStrategy = field(default_factory=DefaultConfirmationStrategy)

    def tool(self, name):
        """Its own tool of that name, else one of its MCP servers' (agents/mcp_servers/)."""
        return next((t for t in self.tools if t.name == name), None) or mcp_catalog.tool_for(self.name, name)

    def all_tools(self):
        """What the model is offered: its own tools and its healthy MCP servers' tools."""
        return [*self.tools, *mcp_catalog.tools_for(self.name)]

    def tool_names(self):
        """Every name the server's own tools take in what its model may be offered: a client's
        frontend tool of one of them is refused (agents/agui/incoming.client_tools), and never
        offered beside it (Runner.client_tools)."""
        return {t.name for t in self.all_tools()}


def state_schema(**properties):
    """The JSON Schema of a state document whose top-level keys hold these (pydantic-typed) values.

    Every key is optional (a thread starts with `{}`); unknown keys are refused.
    """
    import pydantic

    defs, props = {}, {}
    for key, type_ in properties.items():
        schema = pydantic.TypeAdapter(type_).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        props[key] = schema
    out = {"type": "object", "properties": props, "additionalProperties": False}
    if defs:
        out["$defs"] = defs
    return out
