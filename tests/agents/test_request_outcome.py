"""A request's page says what became of the call it approved: a transfer approved with edits to an
account that does not exist failed in the requester's chat, while the inbox's page (and its list and
audit) said only "Approved with edits", read as money moved. Pages open on it follow (approval.ran)."""

import json

import pytest

from agents import services
from agents.models import Thread, ToolCall
from approvals import notify
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import TRANSFER_ARGS, run_continuation, run_here

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("transfers_to_finance")]


def paused(demo, fake_llm):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "c-out", "name": "transfer_money", "arguments": json.dumps(TRANSFER_ARGS)}]})
    run = run_here(services.start_run(thread, demo["alice"], "Pay Bob 500").pk)
    return run, ApprovalRequest.objects.get(thread_ref=thread.id, status="pending")


@pytest.fixture
def told(monkeypatch):
    sent = []
    monkeypatch.setattr(notify, "_send", lambda targets, notice: sent.append((sorted(targets), notice)))
    return sent


def test_an_approved_call_that_failed_says_so_on_its_page(demo, fake_llm, login, told):
    run, req = paused(demo, fake_llm)
    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="ran"' not in page  # pending: nothing ran
    approval_services.decide(req.pk, demo["finn"], "approve", arguments={**TRANSFER_ARGS, "to_account": "5555555555"})
    fake_llm.push({"text": "The transfer failed."})
    run_continuation(run)
    assert ToolCall.objects.get(pk="c-out").status == ToolCall.Status.FAILED
    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert 'class="ran ran-failed"' in page and "This did not work:" in page and "5555555555" in page
    pane = login("finn").get(f"/inbox/{req.pk}/?partial=preview").content.decode()  # the list's reading pane
    assert 'class="ran ran-failed"' in pane and "5555555555" in pane
    french = login("finn").get(f"/inbox/{req.pk}/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Cela n’a pas fonctionné" in french
    ran = [notice for _targets, notice in told if notice["type"] == "approval.ran"]
    assert [n["approval"]["id"] for n in ran] == [req.pk]  # its open pages follow


def test_an_approved_call_that_ran_says_what_it_returned(demo, fake_llm, login, told):
    run, req = paused(demo, fake_llm)
    approval_services.decide(req.pk, demo["finn"], "approve")
    fake_llm.push({"text": "Done."})
    run_continuation(run)
    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert 'class="ran ran-done"' in page and "<strong>It ran.</strong>" in page and "500.00" in page


def test_a_rejected_call_says_nothing_more_than_its_rejection(demo, fake_llm, login, told):
    run, req = paused(demo, fake_llm)
    approval_services.decide(req.pk, demo["finn"], "reject", feedback="No.")
    fake_llm.push({"text": "Understood."})
    run_continuation(run)
    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="ran"' not in page


@pytest.mark.django_db(transaction=True)
async def test_the_pages_that_have_the_request_open_hear_that_it_ran(demo):
    """approval.ran goes to the request's viewers' group, by id (the worker reads nothing more for it)."""
    from asgiref.sync import sync_to_async
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from approvals.routing import websocket_urlpatterns as inbox_ws
    from tests.inbox_helpers import make_request

    req = await sync_to_async(make_request)("alice", group="reviewers")
    page = WebsocketCommunicator(URLRouter(inbox_ws), "/ws/inbox/")
    page.scope["user"] = demo["rita"]
    assert (await page.connect())[0]
    await page.send_json_to({"type": "viewing", "id": req.pk})
    await page.send_json_to({"type": "ping"})  # the viewing frame is handled before the ping's answer
    while (await page.receive_json_from(timeout=5))["type"] != "pong":
        pass
    sent = notify.ran_notice(req.pk)
    await sync_to_async(sent.result)(timeout=5)
    while (heard := await page.receive_json_from(timeout=5))["type"] != "approval.ran":
        pass
    assert heard == {"type": "approval.ran", "approval": {"id": req.pk}}
    await page.disconnect()
