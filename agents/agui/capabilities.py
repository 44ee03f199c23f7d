"""What an agent accepts, as AG-UI's AgentCapabilities (GET /agui/<agent>; @ag-ui/client's
`getCapabilities`): its tools with the approval each needs, state, approvals, inputs, limits.

Built from ag_ui.core's own models, so the shape is the protocol's; what the protocol has no
field for (approval modes, the state schema, how to send a state version) is under `custom`.
"""

from ag_ui.core import (
    AgentCapabilities,
    ExecutionCapabilities,
    HumanInTheLoopCapabilities,
    IdentityCapabilities,
    MultiAgentCapabilities,
    MultimodalCapabilities,
    MultimodalInputCapabilities,
    ReasoningCapabilities,
    StateCapabilities,
    Tool,
    ToolsCapabilities,
    TransportCapabilities,
)
from django.conf import settings

from agents.llm import takes_images
from agents.runtime.statesync import has_state


def capabilities(agent, card):
    """AgentCapabilities of `agent`; `card`: its entry of views.agent_cards() (tools with approval)."""
    approval = {t["name"]: {"approval": t["approval"], "approver": t["approver"]} for t in card["tools"]}
    stated = has_state(agent)
    return AgentCapabilities(
        identity=IdentityCapabilities(name=agent.name, type="agui-inbox", description=agent.description or None,
                                      metadata={"title": agent.title}),
        transport=TransportCapabilities(streaming=True, websocket=False),
        tools=ToolsCapabilities(
            supported=True, client_provided=True, parallel_calls=True,
            items=[Tool(name=t.name, description=t.description, parameters=t.schema) for t in agent.all_tools()],
        ),
        state=StateCapabilities(snapshots=True, deltas=True, persistent_state=True) if stated else None,
        multi_agent=MultiAgentCapabilities(supported=True, handoffs=True) if "workflow" in card else None,
        reasoning=ReasoningCapabilities(supported=True, streaming=True),
        multimodal=MultimodalCapabilities(input=MultimodalInputCapabilities(
            image=takes_images())),  # AGUI_MODEL_VISION, never the offline demo model
        execution=ExecutionCapabilities(max_iterations=settings.AGUI_MAX_TURNS),
        human_in_the_loop=HumanInTheLoopCapabilities(
            supported=True, approvals=True, interrupts=True, approve_with_edits=True, feedback=True),
        custom={
            "title": agent.title,
            "approvals": approval,  # per tool: "never" | "always" | ..., and who decides
            "stateSchema": agent.state_schema if stated else None,
            # the base of a state change (the `version` of the last CUSTOM state_version event)
            "stateVersion": "forwardedProps.stateVersion",
            # names a frontend tool may not take (a workflow's own tools among them: agents/agui/incoming.py)
            "toolNamesTaken": sorted(agent.tool_names()),
            "maxNewMessages": getattr(settings, "AGUI_MAX_NEW_MESSAGES", 200),
            "maxContextChars": settings.AGUI_MAX_CONTEXT_CHARS,
            **({"maxImages": settings.AGUI_MAX_IMAGES, "maxImageBytes": settings.AGUI_MAX_IMAGE_BYTES}
               if takes_images() else {}),
            **({"workflow": card["workflow"]} if "workflow" in card else {}),
        },
    )
