"""Words for the person in the chat, kept apart from the words for the model: tool outcomes,
an edited call's card, the "waits on a decision" refusal, what the offline model retells, and
the numbers in what the model is told about an edit."""

import re

import pytest

from agents import presenters, services, snapshots
from agents.llm.scripted.common import retell
from agents.models import Message, Run, ToolCall
from agents.runtime import runner as agent_runner
from agents.views import agent_cards
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import transfer_request

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SCHEMA = {"properties": {"amount": {"type": "number"}, "count": {"type": "integer"}}}


def test_an_edit_is_told_to_the_model_with_money_as_money_and_who_made_it():
    before = {"amount": 500.0, "currency": "USD", "count": 3.0, "note": "a"}
    after = {"amount": 450.0, "currency": "USD", "count": 4, "note": "b"}
    assert agent_runner.changes_text(before, after, SCHEMA) == (
        'The reviewer changed the arguments before approving (amount: 500.00 USD -> 450.00 USD; '
        'count: 3 -> 4; note: "a" -> "b"). ')
    assert agent_runner.changes_text(before, after, SCHEMA, by_requester=True).startswith(
        "The user changed the arguments before approving (")
    # without a schema or a currency a whole number is still no "500.0"
    assert agent_runner.changes_text({"n": 500.0}, {"n": 450.5}) == (
        "The reviewer changed the arguments before approving (n: 500 -> 450.5). ")


@pytest.mark.parametrize("status, shown, words", [
    ("denied", "blocked", "Blocked: the rules for this tool do not allow it, so it was not run."),
    ("rejected", "rejected", "Rejected, so it was not run."),
    ("expired", "expired", "Nobody decided in time, so it was not run."),
    ("cancelled", "cancelled", "Withdrawn before anyone decided, so it was not run."),
    ("failed", "failed", "This did not work."),
])
def test_a_settled_call_has_a_sentence_for_the_person(status, shown, words):
    told = "Error: x is blocked by policy (default: rule 1 (system files): deny) and was not executed. Do not retry it."
    call = ToolCall(id="c1", status=status, result="" if status == "failed" else told)  # failed: the tool's own words
    value = presenters.tool_outcome(call)
    assert value == {"toolCallId": "c1", "status": shown, "message": words}
    assert "rule 1" not in value["message"] and "retry" not in value["message"]


def test_a_call_that_ran_shows_the_tools_own_output_and_an_open_call_nothing():
    done = ToolCall(id="c2", status="succeeded", result="Transferred 450.00 USD.")
    assert presenters.tool_outcome(done) == {"toolCallId": "c2", "status": "done", "message": "",
                                             "result": "Transferred 450.00 USD."}
    assert presenters.tool_outcome(ToolCall(id="c3", status="rejected"), requester_decided=True)["message"] == (
        "You rejected it, so it was not run.")
    assert presenters.tool_outcome(ToolCall(id="c4", status="awaiting_approval")) is None
    failed = ToolCall(id="c5", status="failed", result="Error: no subscription sub_9")
    assert presenters.tool_outcome(failed)["message"] == "This did not work: no subscription sub_9."


def test_the_offline_model_retells_results_without_the_models_instructions():
    refusal = agent_runner.rejection_text(type("Call", (), {"name": "write_file", "feedback": "Not now"}))
    assert retell(refusal) == "it was rejected (\u201cNot now\u201d)."
    assert retell("Error: delete_file is blocked by policy (default: rule 1 (system files): deny) and was not "
                  "executed. Do not retry it or reach the same goal another way.") == (
        "the rules for this tool do not allow it.")
    edited = agent_runner.changes_text({"amount": 500.0, "currency": "USD"}, {"amount": 450.0, "currency": "USD"},
                                       SCHEMA) + "Transferred 450.00 USD."
    assert retell(edited) == "The reviewer changed amount from 500.00 USD to 450.00 USD before approving. " \
                             "Transferred 450.00 USD."


@pytest.mark.django_db(transaction=True)
def test_a_message_while_finance_decides_is_refused_in_words_without_ids(demo):
    thread = services.create_thread(demo["alice"], "banking")
    req = transfer_request(demo["alice"])
    ApprovalRequest.objects.filter(pk=req.pk).update(thread_ref=thread.pk)
    with pytest.raises(services.RunConflict) as refused:
        services.start_run(thread, demo["alice"], "hello?")
    assert refused.value.code == "interrupt_pending"
    assert refused.value.message == ("This chat is waiting for finance to decide on \u201cTransfer 500.00 USD from "
                                     "1234567890 to 0987654321\u201d. You can write again once they have decided.")
    assert not UUID.search(refused.value.message)
    assert [r.pk for r in refused.value.pending] == [req.pk]  # programs still get the ids


@pytest.mark.django_db(transaction=True)
def test_an_edited_cards_title_says_what_ran(demo):
    req = transfer_request(demo["alice"])
    approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 450})
    req.refresh_from_db()
    card = presenters.approval(req, viewer=demo["alice"])
    # the request is described anew by an edit (approvals.services._describe): its message says what it now
    # approves, like the title the card shows (finalMessage); the arguments asked stay in `arguments`
    assert card["message"] == "Transfer 450.00 USD from 1234567890 to 0987654321"
    assert card["finalMessage"].startswith("Transfer 450.00 USD")
    assert card["arguments"]["amount"] == 500.0
    assert card["argumentsSchema"]["properties"]["amount"]["type"] == "number"
    assert card["createdAt"]


@pytest.mark.django_db(transaction=True)
def test_the_snapshot_carries_outcomes_times_and_stopped_replies(demo):
    thread = services.create_thread(demo["alice"], "ops")
    run = Run.objects.create(thread=thread, status=Run.Status.CANCELLED)
    services.add_message(thread, "user", "Tell me a long story", run=run)
    cut = services.add_message(thread, "assistant", "Once upon a", run=run)
    msg = services.add_message(thread, "assistant", "", run=Run.objects.create(thread=thread, status="succeeded"),
                               tool_calls=[{"id": "call-b", "type": "function",
                                            "function": {"name": "delete_file", "arguments": "{}"}}])
    ToolCall.objects.create(id="call-b", run=msg.run, thread=thread, message=msg, name="delete_file",
                            arguments={"path": "/etc/hosts"},
                            status=ToolCall.Status.DENIED, result="Error: ... Do not retry it.")
    snap = snapshots.thread_snapshot(thread.pk)
    assert snap["tool_outcomes"] == [{"toolCallId": "call-b", "status": "blocked", "title": "Delete file: /etc/hosts",
                                      "message": presenters.OUTCOME_TEXT["denied"][1]}]
    info = snap["message_info"]
    assert set(info) == set(Message.objects.filter(thread=thread).values_list("pk", flat=True))
    assert info[cut.pk]["stopped"] is True and all("at" in v for v in info.values())
    assert not any(v.get("stopped") for k, v in info.items() if k != cut.pk)


@pytest.mark.django_db
def test_each_agent_offers_the_offline_models_prompts_and_says_whether_it_has_state():
    cards = {c["name"]: c for c in agent_cards()}
    assert "Transfer $500 from account 1234567890 to account 0987654321" in cards["banking"]["starters"]
    assert cards["support"]["starters"] and cards["ops"]["starters"]
    assert cards["recipe"]["hasState"] and not cards["banking"]["hasState"]


@pytest.mark.django_db
def test_the_snapshot_says_outcomes_in_the_chat_owners_language(demo):
    """A French chat read "Retiré avant toute décision" live (the worker speaks the owner's language) and,
    after a reload, "Withdrawn before anyone decided": the socket's snapshot had no language of its own."""
    from people.models import Profile

    Profile.objects.update_or_create(user=demo["alice"], defaults={"language": "fr"})
    thread = services.create_thread(demo["alice"], "ops")
    msg = services.add_message(thread, "assistant", "", run=Run.objects.create(thread=thread, status="interrupted"),
                               tool_calls=[{"id": "call-c", "type": "function",
                                            "function": {"name": "delete_file", "arguments": "{}"}}])
    ToolCall.objects.create(id="call-c", run=msg.run, thread=thread, message=msg, name="delete_file",
                            arguments={"path": "/tmp/x"}, status=ToolCall.Status.CANCELLED, result="Error: withdrawn")
    snap = snapshots.thread_snapshot(thread.pk)
    assert [o["message"] for o in snap["tool_outcomes"]] == ["Retiré avant toute décision, donc non exécuté."]


@pytest.mark.django_db
def test_the_approval_card_reads_its_headline_in_the_readers_language(demo):
    """The card quoted the description as stored: in the language of the moment it was asked (or, after an
    edit, LANGUAGE_CODE's), whatever language the chat is read in now."""
    from django.utils import translation

    request = transfer_request(demo["alice"])
    request.said = {"en": {"description": "Transfer 500.00 USD", "impact": "Moves 500.00 USD"},
                    "fr": {"description": "Virement de 500,00 USD", "impact": "Sort 500,00 USD"}}
    with translation.override("fr"):
        card = presenters.approval(request, viewer=demo["alice"])
    assert (card["message"], card["impact"]) == ("Virement de 500,00 USD", "Sort 500,00 USD")


@pytest.mark.django_db(transaction=True)
def test_a_decisions_card_made_in_a_worker_names_the_arguments_in_the_chat_owners_language(demo, api, monkeypatch):
    """The edited card's diff named the fields by the schema ("amount"); it now has the tool's labels,
    and a decision made over the API is carded by a worker, whose language is the site's: in the chat
    owner's, as the rest of the chat."""
    from django.utils import translation

    from agents.agui import custom_events
    from people.models import Profile
    from tests.helpers import paused_transfer

    Profile.objects.update_or_create(user=demo["alice"], defaults={"language": "fr"})
    run, req = paused_transfer(demo["alice"], "call-labels")
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)
    assert api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve",
                            "arguments": {**req.arguments, "amount": 450}}, format="json").status_code == 200
    cards, made = [], custom_events.approval_response
    monkeypatch.setattr(custom_events, "approval_response", lambda *a, **k: cards.append(made(*a, **k)) or cards[-1])
    with translation.override("en"):  # the worker's
        services.continue_decided(req.pk)
    card = cards[0].value
    assert card["argumentLabels"]["amount"] == "Montant" and card["argumentLabels"]["to_account"] == "Compte crédité"
    assert card["message"].startswith("Virement de 450,00")
    with translation.override("en"):
        assert presenters.approval(ApprovalRequest.objects.get(pk=req.pk))["argumentLabels"]["amount"] == "Amount"
