"""The offline demo model's part for the shared-state agents (recipe, planner, writer).

Pure functions of the conversation: `state_demo_reply(text, messages, tool_names)` returns a
reply ({text, tool_calls, args_pace}) or None. The current state comes from the system message
the runner adds each turn, and every state-writing call carries the complete object (the seed's
rule), changes included.
"""

import copy
import json
import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from .common import ARGS_PACE, call

STATE_PREFIX = "Current shared state (JSON):"

CARBONARA = {
    "title": "Classic Pasta Carbonara",
    "skill_level": "Intermediate",
    "special_preferences": [],
    "cooking_time": "30 min",
    "ingredients": [
        {"icon": "🍝", "name": "Spaghetti", "amount": "400g"},
        {"icon": "🥓", "name": "Guanciale or bacon", "amount": "200g"},
        {"icon": "🥚", "name": "Egg yolks", "amount": "4"},
        {"icon": "🧀", "name": "Pecorino Romano", "amount": "100g grated"},
        {"icon": "🧂", "name": "Black pepper", "amount": "To taste"},
    ],
    "instructions": [
        "Bring a large pot of salted water to boil",
        "Cut guanciale into small strips and fry until crispy",
        "Beat egg yolks with grated Pecorino and black pepper",
        "Cook spaghetti until al dente",
        "Reserve 1 cup pasta water, then drain pasta",
        "Remove pan from heat, add hot pasta to guanciale",
        "Quickly stir in egg mixture, adding pasta water to create creamy sauce",
        "Serve immediately with extra Pecorino and black pepper",
    ],
}
PANCAKES = {
    "title": "Fluffy Buttermilk Pancakes",
    "skill_level": "Beginner",
    "special_preferences": [],
    "cooking_time": "15 min",
    "ingredients": [
        {"icon": "🌾", "name": "Plain flour", "amount": "200g"},
        {"icon": "🥛", "name": "Buttermilk", "amount": "300ml"},
        {"icon": "🥚", "name": "Eggs", "amount": "2"},
        {"icon": "🧈", "name": "Melted butter", "amount": "30g"},
        {"icon": "🍯", "name": "Maple syrup", "amount": "To serve"},
    ],
    "instructions": [
        "Whisk the flour with a pinch of salt and a teaspoon of baking powder",
        "Beat the eggs into the buttermilk with the melted butter",
        "Fold the wet mixture into the dry one; a few lumps are fine",
        "Cook ladlefuls in a hot buttered pan until bubbles form, then flip",
        "Serve warm with maple syrup",
    ],
}
_MEAT = re.compile(r"guanciale|bacon|pancetta|chicken|beef|pork|ham", re.I)


def _call(name, arguments):
    return call(name, arguments, ensure_ascii=False)  # recipe text keeps its accents readable


def current_state(messages):
    for msg in messages:
        content = msg.get("content")
        if msg.get("role") == "system" and isinstance(content, str) and content.startswith(STATE_PREFIX):
            try:
                state = json.loads(content[len(STATE_PREFIX):])
            except json.JSONDecodeError:
                return {}
            return state if isinstance(state, dict) else {}
    return {}


def state_demo_reply(text, messages, names):
    state = current_state(messages)
    if "update_recipe" in names:
        return _recipe(text, state)
    if "generate_task_steps" in names or "update_preferences" in names:
        return _planner(text, state)
    if "create_document" in names:
        return _writer(text, state)
    return None


# --- recipe ---------------------------------------------------------------------------------


def _add_preference(recipe, pref):
    if pref not in recipe["special_preferences"]:
        recipe["special_preferences"].append(pref)


def _recipe(text, state):
    current = state.get("recipe") if isinstance(state.get("recipe"), dict) else None
    recipe = copy.deepcopy(current or (PANCAKES if re.search(r"pancake", text, re.I) else CARBONARA))
    recipe.setdefault("special_preferences", [])
    if re.search(r"vegetarian|veggie|no meat", text, re.I):
        for item in recipe["ingredients"]:
            if _MEAT.search(item["name"]):
                item.update(icon="🍄", name="Chestnut mushrooms", amount="250g")
        recipe["instructions"] = [_MEAT.sub("mushrooms", step) for step in recipe["instructions"]]
        _add_preference(recipe, "Vegetarian")
        say = _("I made it vegetarian: mushrooms take the place of the meat, everything else stays.")
    elif re.search(r"gluten", text, re.I):
        for item in recipe["ingredients"]:
            if re.search(r"spaghetti|pasta|flour", item["name"], re.I) and "Gluten-free" not in item["name"]:
                item["name"] = "Gluten-free " + item["name"][0].lower() + item["name"][1:]
        _add_preference(recipe, "Gluten-free")
        say = _("I switched to gluten-free ingredients and kept the rest of the recipe.")
    elif re.search(r"improve|better|upgrade|fancier", text, re.I):
        names = {i["name"] for i in recipe["ingredients"]}
        for extra in ({"icon": "🌿", "name": "Fresh flat-leaf parsley", "amount": "1 small bunch"},
                      {"icon": "🍋", "name": "Lemon zest", "amount": "1 lemon"}):
            if extra["name"] not in names:
                recipe["ingredients"].append(extra)
        finish = "Finish with lemon zest and chopped parsley for freshness"
        if finish not in recipe["instructions"]:
            recipe["instructions"].append(finish)
        say = _("I added fresh parsley and lemon zest and a finishing step; nothing was removed.")
    elif re.search(r"recipe|cook|make|carbonara|pasta|pancake|dinner|lunch|breakfast|dish", text, re.I):
        if current and not re.search(r"new|another|different|pancake|carbonara", text, re.I):
            return {"text": _("Your recipe is in the card on the right. Ask me to make it vegetarian, "
                              "gluten-free, or to improve it.")}
        recipe = copy.deepcopy(PANCAKES if re.search(r"pancake", text, re.I) else CARBONARA)
        say = _("Here's your recipe: %(title)s!") % {"title": recipe["title"]}
    else:
        return {"help": "recipe"}
    return {"text": say, "tool_calls": [_call("update_recipe", {"recipe": recipe})], "args_pace": ARGS_PACE}


# --- planner --------------------------------------------------------------------------------

_PLANS = {
    # the starter's plan ("Plan a birthday party"): said in the language the starter was typed in
    r"birthday|party": [gettext_noop("Pick a date and make a guest list"), gettext_noop("Book or prepare the venue"),
                        gettext_noop("Send the invitations"), gettext_noop("Order the cake and plan the food"),
                        gettext_noop("Decorate and set up")],
    r"mov(e|ing)|relocat": ["Sort and declutter each room", "Book the movers or a van",
                            "Pack room by room and label the boxes", "Change your address with banks and services",
                            "Clean the old place and hand over the keys"],
    r"trip|travel|vacation|holiday": ["Choose the destination and dates", "Book transport",
                                      "Book accommodation", "Plan the first days", "Pack and check documents"],
}


def _steps_for(task):
    for pattern, steps in _PLANS.items():
        if re.search(pattern, task, re.I):
            return [_(step) for step in steps]  # the other plans are English: their msgids are themselves
    topic = task.strip().rstrip(".!?") or "the task"
    return [f"Write down what done looks like for: {topic}", "List what you need and who can help",
            "Block time in your calendar", "Do the first small piece today", "Review progress and adjust"]


def _planner(text, state):
    steps = [s for s in state.get("steps") or [] if isinstance(s, dict)]
    prefs = state.get("preferences") if isinstance(state.get("preferences"), dict) else {}
    pref = re.search(r"\b(?:i prefer|i like|my preference is|preferences?:)\s+(.+)", text, re.I)
    if pref:
        likes = [*prefs.get("likes", []), pref[1].strip().rstrip(".!")]
        return {"text": _("Noted; I'll keep that in mind when planning."),
                "tool_calls": [_call("update_preferences", {"preferences": {**prefs, "likes": likes}})],
                "args_pace": ARGS_PACE}
    add = re.search(r"\badd (?:a )?step:?\s+(.+)", text, re.I)
    if add and steps:
        new = [*steps, {"description": add[1].strip().rstrip("."), "status": "pending", "estimated_duration": "15 min"}]
        return {"text": _("Here is the plan with the new step; please confirm it."),
                "tool_calls": [_call("generate_task_steps", {"steps": new})], "args_pace": ARGS_PACE}
    task = re.search(r"\b(?:plan|organi[sz]e|prepare for|help me(?: with)?|steps (?:for|to))\s+(.+)", text, re.I)
    if task:
        steps = [{"description": d, "status": "pending", "estimated_duration": "30 min"} for d in _steps_for(task[1])]
        return {"text": ngettext("Here is a plan in %(count)s step. Please confirm it before I make it your task list.",
                                 "Here is a plan in %(count)s steps. Please confirm it before I make it your task list.",
                                 len(steps)) % {"count": len(steps)},
                "tool_calls": [_call("generate_task_steps", {"steps": steps})], "args_pace": ARGS_PACE}
    return {"help": "planner"}


# --- writer ---------------------------------------------------------------------------------


def _writer(text, state):
    doc = state.get("document") if isinstance(state.get("document"), dict) else None
    about = re.search(r"\b(?:write|draft|compose)\b.*?\babout\s+(.+)", text, re.I | re.S)
    if about:
        topic = about[1].strip().rstrip(".!?")
        title = topic[:1].upper() + topic[1:]
        content = (
            f"# {title}\n\n"
            f"{title} matters more than it first appears. This short note explains why, what to watch for, "
            "and where to start.\n\n"
            "## Why it matters\n\n"
            "Small, steady steps beat big plans that never start. Knowing the basics saves time later.\n\n"
            "## Where to start\n\n"
            "- Pick one thing to try this week\n- Write down what happened\n- Share what you learned\n"
        )
        args = {"title": title, "content": content,
                "metadata": {"topic": topic, "tone": "friendly", "words": len(content.split())}}
        return {"text": _("Here is a draft; it is saved once you approve it."),
                "tool_calls": [_call("create_document", args)], "args_pace": ARGS_PACE}
    if doc and re.search(r"\b(revise|conclusion|shorter|add a section)\b", text, re.I):
        content = doc.get("content", "").rstrip() + "\n\n## Conclusion\n\nStart small, keep going, and look back once a month.\n"
        args = {"title": doc.get("title", "Untitled"), "content": content,
                "metadata": {**(doc.get("metadata") or {}), "words": len(content.split())}}
        return {"text": _("I added a conclusion; approve the revision to save it."),
                "tool_calls": [_call("create_document", args)], "args_pace": ARGS_PACE}
    return {"help": "writer"}
