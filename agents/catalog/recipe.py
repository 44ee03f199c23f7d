"""The recipe agent: `update_recipe` writes the whole recipe; its arguments stream into
the shared state as predictions while the model writes them."""

from typing import Annotated, Literal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from pydantic import BaseModel, ConfigDict, Field

from agents.runtime.tools import tool

from .agent import Agent, state_schema
from .confirmation import RecipeConfirmationStrategy

SkillLevel = Literal["Beginner", "Intermediate", "Advanced"]
CookingTime = Literal["5 min", "15 min", "30 min", "45 min", "60+ min"]


class Ingredient(BaseModel):
    """An ingredient with its details."""

    model_config = ConfigDict(extra="forbid")
    # titles are msgids (the argument editor's labels), descriptions too (the model reads them in English)
    icon: Annotated[str, Field(max_length=16, title=gettext_noop("Icon"),
                                description=gettext_noop("Emoji icon representing the ingredient (e.g. 🥕)"))]
    name: Annotated[str, Field(min_length=1, max_length=120, title=gettext_noop("Name"),
                                description=gettext_noop("Name of the ingredient"))]
    amount: Annotated[str, Field(max_length=80, title=gettext_noop("Amount"),
                                  description=gettext_noop("Amount or quantity of the ingredient"))]


class Recipe(BaseModel):
    """A complete recipe."""

    model_config = ConfigDict(extra="forbid")
    title: Annotated[str, Field(min_length=1, max_length=200, title=gettext_noop("Title"),
                                 description=gettext_noop("The title of the recipe"))]
    skill_level: Annotated[SkillLevel, Field(title=gettext_noop("Skill level"),
                                             description=gettext_noop("The skill level required"))]
    special_preferences: Annotated[
        list[Annotated[str, Field(max_length=60)]],
        Field(max_length=20, title=gettext_noop("Dietary preferences"),
              description=gettext_noop("Dietary preferences (e.g. Vegetarian, Gluten-free)")),
    ] = []
    cooking_time: Annotated[CookingTime, Field(title=gettext_noop("Cooking time"),
                                               description=gettext_noop("The estimated cooking time"))]
    ingredients: Annotated[list[Ingredient], Field(max_length=60, title=gettext_noop("Ingredients"),
                                                   description=gettext_noop("Complete list of ingredients"))]
    instructions: Annotated[
        list[Annotated[str, Field(max_length=1000)]],
        Field(max_length=60, title=gettext_noop("Instructions"), description=gettext_noop("Step-by-step instructions"))
    ]


@tool(summary=gettext_noop("Update the recipe card"),
      approval_mode="never", risk="low", reversible=True,
      describe=lambda a: _("Update the recipe card: %(title)s") % {"title": a["recipe"].get("title", "")})
def update_recipe(ctx, recipe: Annotated[Recipe, Field(title=gettext_noop("Recipe"))]):
    """Update the recipe with new or modified content.

    You MUST write the complete recipe with ALL fields, even when changing only a few items.
    When modifying an existing recipe, include ALL existing ingredients and instructions plus
    your changes. NEVER delete existing data - only add or modify.
    """
    return "Recipe updated."


AGENT = Agent(
    name="recipe",
    title=gettext_noop("Recipe assistant"),
    description=gettext_noop("Writes and improves a recipe card that fills in live while the model writes it."),
    system_prompt=(
        "You are a helpful recipe assistant that creates and modifies recipes.\n"
        "CRITICAL RULES:\n"
        "1. You receive the current recipe state in a system message.\n"
        "2. To update the recipe, you MUST use the update_recipe tool.\n"
        "3. When modifying a recipe, ALWAYS include ALL existing data plus your changes in the tool call.\n"
        "4. NEVER delete existing ingredients or instructions - only add or modify.\n"
        "5. After calling the tool, give a brief conversational message (1-2 sentences).\n"
        "Use real emojis for ingredient icons. Leave special_preferences empty unless the user asks."
    ),
    tools=[update_recipe],
    state_schema=state_schema(recipe=Recipe),
    predict_state_config={"recipe": {"tool": "update_recipe", "tool_argument": "recipe"}},
    confirmation_strategy=RecipeConfirmationStrategy(),
)
