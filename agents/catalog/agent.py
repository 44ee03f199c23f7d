from dataclasses import dataclass, field


@dataclass
class Agent:
    name: str
    title: str
    description: str
    system_prompt: str
    tools: list = field(default_factory=list)
    state_schema: dict | None = None
    predict_state_config: dict | None = None

    def tool(self, name):
        return next((t for t in self.tools if t.name == name), None)
