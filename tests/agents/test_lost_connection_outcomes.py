"""A tool whose database connection breaks while it runs (a COMMIT made on the server whose answer
never came back: a network cut, a proxy or a failover right after it) is settled from its records,
never reported `failed`: the transfer moved the money and read "transfer_money failed unexpectedly",
the model told the person it did not work, and a second request moved it twice."""

import pytest
from django import db
from django.core import mail
from django.db import connection

from agents import tasks
from agents.catalog import banking
from agents.catalog.models import Transfer
from agents.models import Message, ToolCall
from tests.agents.test_recorded_outcomes import approved_transfer

pytestmark = [pytest.mark.django_db(transaction=True)]
LOST = "consuming input failed: server closed the connection unexpectedly"


def break_the_transfers_connection(monkeypatch, after_commit, times=None):
    """The transfer's COMMIT reaches the server and its answer is lost (after_commit), or the
    connection breaks before it (its transaction rolled back on the server): every time, or the
    first `times`."""
    armed, broken = [], []
    real_create, real_commit = Transfer.objects.create, connection.commit

    def create(**fields):
        if not after_commit and (times is None or len(broken) < times):
            broken.append(True)
            raise db.OperationalError(LOST)
        armed.append(True)
        return real_create(**fields)

    def commit():
        real_commit()
        if armed:
            armed.clear()
            raise db.OperationalError(LOST)

    monkeypatch.setattr(Transfer.objects, "create", create)
    monkeypatch.setattr(connection, "commit", commit)


def test_a_transfer_whose_commits_answer_was_lost_is_settled_from_its_record(demo, fake_llm, monkeypatch):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    break_the_transfers_connection(monkeypatch, after_commit=True)
    fake_llm.push({"text": "The 75 USD went through."})
    mail.outbox.clear()  # finance's request
    tasks.continue_decided(woken[0])
    monkeypatch.undo()
    call = ToolCall.objects.get(pk="call-recorded")
    assert call.status == "succeeded", call.result
    assert call.result.startswith("Transferred 75.00 USD from 1234567890 to 0987654321 (read back from the bank's")
    assert Message.objects.get(role="tool", tool_call_id=call.pk).content == call.result
    assert fake_llm.requests[-1]["messages"][-1]["content"] == call.result  # the model hears it went through
    assert Transfer.objects.count() == 1
    assert mail.outbox == []  # nothing unknown for the operators


def test_a_transfer_whose_connection_broke_before_its_commit_is_run_again_on_a_new_one(demo, fake_llm, monkeypatch):
    """Its records show it did not take effect: the approved transfer runs again at once, as recovery
    runs one whose worker died there. Said `failed` for good, it was lost to a failover and had to be
    asked and approved again."""
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    break_the_transfers_connection(monkeypatch, after_commit=False, times=1)
    fake_llm.push({"text": "The 75 USD went through."})
    tasks.continue_decided(woken[0])
    monkeypatch.undo()
    call = ToolCall.objects.get(pk="call-recorded")
    assert (call.status, call.attempts) == ("succeeded", 2), call.result
    assert call.result.startswith("Transferred 75.00 USD from 1234567890 to 0987654321")
    assert Transfer.objects.count() == 1
    assert Message.objects.filter(role="tool", tool_call_id=call.pk).count() == 1


def test_a_transfer_whose_connection_breaks_every_time_is_said_not_executed(demo, fake_llm, monkeypatch, settings):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    break_the_transfers_connection(monkeypatch, after_commit=False)
    fake_llm.push({"text": "It did not go through."})
    tasks.continue_decided(woken[0])
    monkeypatch.undo()
    call = ToolCall.objects.get(pk="call-recorded")
    assert (call.status, call.attempts) == ("failed", settings.AGUI_TOOL_MAX_ATTEMPTS)
    assert call.result == ("Error: transfer_money was not executed: its database connection broke before it took "
                           "effect, as the tool's records show.")
    assert not Transfer.objects.exists()


def test_without_readable_records_the_outcome_is_unknown_not_failed(demo, fake_llm, monkeypatch):
    paused, woken = approved_transfer(demo, fake_llm, monkeypatch)
    break_the_transfers_connection(monkeypatch, after_commit=True)

    def unreadable(*args):
        raise RuntimeError("the bank's records are away")
    monkeypatch.setattr(banking.transfer_money, "outcome", unreadable)
    fake_llm.push({"text": "Please check."})
    mail.outbox.clear()
    tasks.continue_decided(woken[0])
    monkeypatch.undo()
    call = ToolCall.objects.get(pk="call-recorded")
    assert call.status == "outcome_unknown"
    assert "its database connection broke while it ran" in call.result
    assert Transfer.objects.count() == 1  # not repeated


def test_a_transfer_run_again_after_it_took_effect_says_what_it_did(demo):
    """Its unique record refuses a second transfer for the same call: that call succeeded, once (it
    read "this transfer was already executed", a failure)."""
    from types import SimpleNamespace

    arguments = {"from_account": "1234567890", "to_account": "0987654321", "amount": 5, "currency": "USD"}
    ctx = SimpleNamespace(user=demo["alice"], tool_call_id="call-twice")
    first = banking.transfer_money.run(ctx, arguments)
    again = banking.transfer_money.run(ctx, arguments)
    assert first.startswith("Transferred 5.00 USD") and again.startswith("Transferred 5.00 USD from 1234567890")
    assert Transfer.objects.filter(tool_call_ref="call-twice").count() == 1
