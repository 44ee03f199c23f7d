"""The task planner (two state keys): `generate_task_steps` proposes the steps, which the
user confirms before they become the plan; `update_preferences` writes the user's preferences."""

from typing import Annotated, Any, Literal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext
from pydantic import BaseModel, ConfigDict, Field

from agents.runtime.tools import tool

from .agent import Agent, state_schema
from .confirmation import TaskPlannerConfirmationStrategy


class TaskStep(BaseModel):
    """A single task step."""

    model_config = ConfigDict(extra="forbid")
    # titles are msgids: the argument editor's labels in the reviewer's language
    description: Annotated[str, Field(min_length=1, max_length=300, title=gettext_noop("Description"))]
    status: Annotated[Literal["pending", "completed", "skipped"], Field(title=gettext_noop("Status"))] = "pending"
    estimated_duration: Annotated[str, Field(max_length=40, title=gettext_noop("Estimated duration"))] = "5 min"


Steps = Annotated[list[TaskStep], Field(min_length=1, max_length=30, title=gettext_noop("Steps"))]
Preferences = Annotated[dict[str, Any], Field(title=gettext_noop("Preferences"))]


def _describe(a):
    steps = a.get("steps") or []
    listed = "; ".join(s.get("description", "") for s in steps[:5]) + ("; …" if len(steps) > 5 else "")
    return ngettext("Set the plan to %(count)s step: %(steps)s", "Set the plan to %(count)s steps: %(steps)s",
                    len(steps)) % {"count": len(steps), "steps": listed}


@tool(summary=gettext_noop("Write the task list of the user's task"),
      approval_mode="always", approver="requester", risk="low", reversible=True, describe=_describe,
      impact=lambda a: _("Replaces the task list of this chat"))
def generate_task_steps(ctx, steps: Steps):
    """Generate the task steps for the user's task. Write the complete list: keep existing steps
    (and their status) and add or change only what the user asked for."""
    return f"Generated {len(steps)} steps."


@tool(summary=gettext_noop("Update the user's planning preferences"),
      approval_mode="never", risk="low", reversible=True, describe=lambda a: _("Update your planning preferences"))
def update_preferences(ctx, preferences: Preferences):
    """Update the user's planning preferences. Write the complete preferences object."""
    return "Preferences updated."


AGENT = Agent(
    name="planner",
    title=gettext_noop("Task planner"),
    description=gettext_noop("Breaks a task into steps you confirm, and keeps your planning preferences."),
    system_prompt=(
        "You are a task planner. You receive the current steps and preferences in a system message. "
        "To propose or change the plan call generate_task_steps with the COMPLETE list of steps; the user "
        "confirms it before it becomes the plan. To record preferences call update_preferences with the "
        "complete preferences object. If the user rejects a plan, ask what to change."
    ),
    tools=[generate_task_steps, update_preferences],
    state_schema=state_schema(steps=list[TaskStep], preferences=Preferences),
    predict_state_config={
        "steps": {"tool": "generate_task_steps", "tool_argument": "steps"},
        "preferences": {"tool": "update_preferences", "tool_argument": "preferences"},
    },
    confirmation_strategy=TaskPlannerConfirmationStrategy(),
)
