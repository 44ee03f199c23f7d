"""The demo prompts the offline model understands, per agent: the chat offers them as starters.

Each prompt is marked for translation (gettext_noop: the English stays the key the scripts
match); the chat shows it in the reader's language, and `understood` maps a translated prompt
back to the English one, so the offline model answers a prompt typed in any of LANGUAGES, in
that language (agents/llm/scripted/model.py).
"""

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

STARTERS = {
    "banking": [
        gettext_noop("Transfer $500 from account 1234567890 to account 0987654321"),
        gettext_noop("What's the balance of account 1234567890?"),
        gettext_noop("Cancel my subscription sub_123"),
    ],
    "ops": [
        gettext_noop("List the files"),
        gettext_noop("Write 'hello' to notes.txt"),
        gettext_noop("Delete old-notes.txt"),
        gettext_noop("Delete /etc/hosts"),
    ],
    "recipe": [gettext_noop("I want to make a classic Italian pasta carbonara"), gettext_noop("Make it vegetarian"), gettext_noop("Improve the recipe")],
    "planner": [gettext_noop("Plan a birthday party"), gettext_noop("Add a step: buy candles"), gettext_noop("I prefer short tasks in the morning")],
    "writer": [gettext_noop("Write a short document about remote work"), gettext_noop("Revise it: add a conclusion")],
    "support": [
        gettext_noop("I want a refund for order 12345"),
        gettext_noop("My order 12346 arrived damaged, please send a replacement"),
        gettext_noop("I want a refund"),
    ],
    "notes": [gettext_noop("Search the notes for lease"), gettext_noop("Tag note 2 urgent"), gettext_noop("Archive note 1"), gettext_noop("Delete note 3")],
}


def starters(agent):
    """The agent's prompts in the active language."""
    return [gettext(prompt) for prompt in STARTERS.get(agent, [])]


def understood(text):
    """(the English prompt, its language) when `text` is a starter prompt as some language says
    it (the English one included); else (text, None)."""
    wanted = " ".join((text or "").split()).casefold()
    if not wanted:
        return text, None
    for language, _name in settings.LANGUAGES:
        with translation.override(language):
            for prompts in STARTERS.values():
                for prompt in prompts:
                    if " ".join(gettext(prompt).split()).casefold() == wanted:
                        return prompt, language
    return text, None
