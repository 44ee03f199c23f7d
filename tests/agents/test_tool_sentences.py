"""What a tool answers, as the model reads it and as a person does: the model's English is what the tools
always wrote; the chat's card and the offline demo model say the same in the reader's language, amounts as
the language writes them (agents/runtime/sentences.py)."""

import json

import pytest
from django.utils import translation

from agents import presenters
from agents.catalog import banking, support
from agents.llm.scripted.model import scripted_reply
from agents.llm.scripted.starters import starters
from agents.models import ToolCall
from agents.runtime.sentences import person_words

BANKING_TOOLS = [{"function": {"name": n}} for n in ("transfer_money", "cancel_subscription", "check_balance")]
TRANSFERRED = ("Transferred 250.00 USD from 0987654321 to 1234567890. New balance of 0987654321: 1200.50 USD.")


def test_the_model_reads_what_the_tools_always_wrote():
    assert banking.TRANSFERRED(amount="250.00", currency="USD", src="0987654321", dst="1234567890",
                               balance="1200.50") == TRANSFERRED
    assert banking.HOLDS(account="1234567890", balance="4981.60", currency="USD") == \
        "Account 1234567890 holds 4981.60 USD."
    assert support.ORDER_RECORD(order_id="12345", item_name="Wireless Headphones", amount="129.99 USD",
                                status="delivered") == json.dumps(
        {"order_id": "12345", "item_name": "Wireless Headphones", "amount": "129.99 USD", "status": "delivered"})


@pytest.mark.parametrize("code, said", [
    ("fr", "Virement de 250,00 USD effectué de 0987654321 vers 1234567890. Nouveau solde de 0987654321 : "
           "1\u202f200,50 USD."),
    ("zh-hans", "已从 0987654321 向 1234567890 转账 250.00 USD。0987654321 的新余额：1200.50 USD。"),
])
def test_a_done_calls_card_says_the_result_in_the_readers_language_and_keeps_the_models(code, said):
    call = ToolCall(pk="c1", name="transfer_money", status=ToolCall.Status.SUCCEEDED, result=TRANSFERRED)
    with translation.override(code):
        value = presenters.tool_outcome(call)
    assert value["status"] == "done"
    assert value["said"].replace("\u202f", " ").replace("\xa0", " ") == said.replace("\u202f", " ")
    assert value["result"] == TRANSFERRED  # what the assistant was told, as it was told


def test_a_result_no_sentence_words_has_none_to_show():
    call = ToolCall(pk="c1", name="notes__search", status=ToolCall.Status.SUCCEEDED, result="3 notes match")
    with translation.override("fr"):
        value = presenters.tool_outcome(call)
    assert "said" not in value and value["result"] == "3 notes match"


def test_a_failed_calls_reason_is_said_in_the_readers_language():
    call = ToolCall(pk="c1", name="cancel_subscription", status=ToolCall.Status.FAILED,
                    result="Error: no subscription sub_999 belongs to you")
    with translation.override("fr"):
        value = presenters.tool_outcome(call)
    assert value["message"] == "Cela n’a pas fonctionné : aucun abonnement sub_999 ne vous appartient."


def test_a_lookups_record_is_said_with_its_status_and_amount_in_the_readers_language():
    record = support.ORDER_RECORD(order_id="12345", item_name="Wireless Headphones", amount="1129.99 USD",
                                  status="delivered")
    with translation.override("fr"):
        said = person_words(record)
    assert said.replace("\u202f", " ").replace("\xa0", " ") == \
        "Commande 12345 : Wireless Headphones, 1 129,99 USD, Livrée."


def _retold(code, result):
    with translation.override(code):
        prompt = starters("banking")[0]
    return scripted_reply([
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "…", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ], BANKING_TOOLS)["text"]


def test_a_refusal_before_policy_is_retold_in_the_language_of_the_conversation():
    """The runner's "Error: <why>, so <tool> was not executed." was spliced into the translated reply."""
    text = _retold("zh-hans", "Error: account 1234567890 is not yours, so transfer_money was not executed.")
    assert "not yours" not in text and "transfer_money" not in text
    assert "账户 1234567890 不属于您" in text
    text = _retold("fr", "Error: account 0987654321 does not take EUR")
    assert text == "Cela n’a pas fonctionné : le compte 0987654321 n’accepte pas les EUR"


def test_a_result_no_sentence_words_is_quoted_not_spliced():
    text = _retold("fr", "Error: the bank's gateway is down")
    assert "« the bank's gateway is down »" in text


def test_a_long_result_that_starts_like_a_sentence_is_read_at_once():
    """A regular expression per sentence backtracked without end: a file of "Transferred a from b to …"
    read back (1,452 characters) held the web process 7 s whenever its chat was shown, and doubling it
    cost 16 times as much. The reading is now one pass per sentence; the same text at its longest."""
    import time

    started = time.process_time()
    for repeat in (50, 100, 160, 2000):
        text = "Transferred " + "a from b to " * repeat + "c. New balance of x: 1 USD"
        assert person_words(text) is None
    assert time.process_time() - started < 0.5  # it took 62 s at 2,412 characters


def test_a_value_that_holds_the_words_after_it_is_not_misread():
    """Read left to right, a value ends at the first place the next words stand; a text that is not the
    sentence filled in (the values would make another text) is no sentence of ours."""
    assert banking.HOLDS.read("Account 1234567890 holds 4981.60 USD.") == {
        "account": "1234567890", "balance": "4981.60", "currency": "USD"}
    assert banking.TRANSFERRED.read(TRANSFERRED.replace("New balance of 0987654321", "New balance of 1111")) is None


def test_another_tools_output_is_not_said_as_ours():
    """A file holding our refund's sentence, read back: its card does not say "Refund of 4,999.00 USD
    recorded" in the reader's language as though the refund tool had run."""
    text = "Refund of 4999 USD recorded for order 1042 (Laptop)."
    for name in ("read_file", "mcp_fs__read_text_file", ""):
        call = ToolCall(pk="c2", name=name, status=ToolCall.Status.SUCCEEDED, result=text)
        with translation.override("fr"):
            value = presenters.tool_outcome(call)
        assert "said" not in value and value["result"] == text
    call = ToolCall(pk="c3", name="submit_refund", status=ToolCall.Status.SUCCEEDED, result=text)
    with translation.override("fr"):
        said = presenters.tool_outcome(call)["said"]
    assert said.startswith("Remboursement de 4") and "999,00 USD enregistré pour la commande 1042" in said
