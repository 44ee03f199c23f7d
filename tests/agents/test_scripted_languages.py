"""The offline demo model in every language: each demo agent's starter prompts exist in each of
LANGUAGES, and a starter typed in a language is answered in it, with the same tool call."""

import json

import pytest
from django.conf import settings
from django.utils import translation

from agents.llm.scripted.model import scripted_reply
from agents.llm.scripted.starters import STARTERS, starters, understood

OTHERS = [code for code, _ in settings.LANGUAGES if code != "en"]
BANKING_TOOLS = [{"function": {"name": n}} for n in ("transfer_money", "cancel_subscription", "check_balance")]


@pytest.mark.parametrize("code", OTHERS)
def test_every_starter_prompt_exists_in_every_language(code):
    with translation.override(code):
        for agent, prompts in STARTERS.items():
            said = starters(agent)
            untranslated = [p for p, s in zip(prompts, said, strict=True) if s == p]
            assert not untranslated, f"{agent} in {code}: {untranslated}"
            # and each is read back as the English prompt the scripts know
            assert [understood(s) for s in said] == [(p, code) for p in prompts]


@pytest.mark.parametrize("code, words", [("id", "Saya akan mentransfer 500,00 USD"), ("fr", "Je vais virer 500,00 USD"),
                                         ("pt-br", "Vou transferir 500,00 USD"), ("zh-hans", "转账 500.00 USD")])
def test_a_starter_in_another_language_is_answered_in_it(code, words):
    with translation.override(code):
        prompt = starters("banking")[0]
    english = scripted_reply([{"role": "user", "content": STARTERS["banking"][0]}], BANKING_TOOLS)
    reply = scripted_reply([{"role": "user", "content": prompt}], BANKING_TOOLS)
    assert words in reply["text"] and english["text"].startswith("I'll transfer 500.00 USD")
    assert [(c["name"], json.loads(c["arguments"])) for c in reply["tool_calls"]] == \
        [(c["name"], json.loads(c["arguments"])) for c in english["tool_calls"]]


def test_the_tool_result_is_retold_in_the_language_of_the_conversation():
    with translation.override("id"):
        prompt = starters("banking")[0]
    messages = [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "…", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "The reviewer changed the arguments before approving "
         "(amount: 500.0 -> 450.0). Transferred 450.00 USD from 1234567890 to 0987654321. "
         "New balance of 1234567890: 550.00 USD."},
    ]
    text = scripted_reply(messages, BANKING_TOOLS)["text"]
    # the amounts the tool wrote for the model ("450.00") as the language writes them
    assert text == ("Selesai. Peninjau mengubah amount dari 500.0 menjadi 450.0 sebelum menyetujui. Berhasil "
                    "mentransfer 450,00 USD dari 1234567890 ke 0987654321. Saldo baru 1234567890: 550,00 USD.")


def test_a_message_typed_in_english_is_answered_in_english_whatever_the_page_language():
    with translation.override("fr"):
        reply = scripted_reply([{"role": "user", "content": STARTERS["banking"][0]}], BANKING_TOOLS)
    assert reply["text"].startswith("I'll transfer 500.00 USD")


NOTES_TOOLS = ["notes__search", "notes__tag", "notes__archive", "notes__delete", "notes__enable_export"]


@pytest.mark.parametrize("code", OTHERS)
def test_every_agents_starters_are_answered_in_the_language_they_were_typed_in(code):
    """Not only banking: each demo agent's reply to each of its starter prompts (the ones that make
    a tool call) is said in the starter's language, with the same call as in English."""
    from agents.registry import get_agent

    english_only = []
    for agent, prompts in STARTERS.items():
        names = NOTES_TOOLS if agent == "notes" else [t.name for t in get_agent(agent).tools]
        tools = [{"function": {"name": n}} for n in names]
        with translation.override(code):
            said = starters(agent)
        for prompt, typed in zip(prompts, said, strict=True):
            english = scripted_reply([{"role": "user", "content": prompt}], tools)
            if not english.get("tool_calls"):
                continue  # a starter that needs an earlier turn (e.g. "Make it vegetarian") answers with help
            reply = scripted_reply([{"role": "user", "content": typed}], tools)
            assert [c["name"] for c in reply["tool_calls"]] == [c["name"] for c in english["tool_calls"]]
            if reply["text"] == english["text"]:
                english_only.append(f"{agent}: {prompt}")
    assert not english_only, english_only


def test_a_failure_after_an_edits_note_is_not_retold_as_done():
    """The result of an edited call begins with the note of the edit; the demo model said "Done."
    about the error that followed it."""
    result = ('You changed subscription_id from "sub_123" to "sub_999" before approving. '
              "Error: no subscription sub_999 belongs to you")
    reply = scripted_reply([{"role": "user", "content": "Cancel my subscription sub_123"},
                            {"role": "tool", "tool_call_id": "c1", "content": result}], BANKING_TOOLS)
    assert reply["text"].startswith("That did not work:") and "Done." not in reply["text"]
    unknown = scripted_reply([{"role": "user", "content": "What is the meaning of life?"}], BANKING_TOOLS)
    assert "A new chat with this assistant lists them." in unknown["text"]  # not "the prompts above the box"
