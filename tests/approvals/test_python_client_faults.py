"""The Python client (clients/python) against the real API (Django's test client behind an httpx
transport), with the faults a network between them brings: an answer lost after the inbox acted on
the request, a gateway's 502 and a dropped connection while the inbox restarts. The happy paths
against the live stack: tests/integration/test_python_client.py."""

import sys
from pathlib import Path

import httpx
import pytest

from approvals import services
from approvals.models import OutsideCall

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
import agui_inbox_client  # noqa: E402
from agui_inbox_client import Inbox, InboxError, require_approval  # noqa: E402

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}


class Network:
    """An httpx transport handing each request to the inbox's views, unless a fault is scripted for it:
    (method, path part, fault, before) with fault "lost" (the inbox acts, its answer never arrives),
    "down" (the connection fails, nothing reaches the inbox) or a status code a gateway answers;
    `before` runs first (what happens in the inbox meanwhile)."""

    def __init__(self, client):
        self.client, self.faults, self.calls = client, [], []

    def __call__(self, request):
        path = request.url.raw_path.decode()
        self.calls.append((request.method, path))
        for i, (method, part, fault, before) in enumerate(self.faults):
            if method == request.method and part in path:
                del self.faults[i]
                if before:
                    before()
                if fault == "down":
                    raise httpx.ConnectError("connection refused", request=request)
                if fault != "lost":
                    return httpx.Response(fault, text="<html>Bad Gateway</html>")
                self._through(request, path)
                raise httpx.ReadError("connection reset by peer", request=request)
        return self._through(request, path)

    def _through(self, request, path):
        headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in request.headers.items()
                   if k.lower() not in ("content-type", "content-length", "host")}
        answer = self.client.generic(request.method, path, data=request.content,
                                     content_type=request.headers.get("content-type", ""), **headers)
        return httpx.Response(answer.status_code, headers=dict(answer.items()), content=answer.content)


@pytest.fixture
def network(demo):
    from django.test import Client
    from rest_framework.authtoken.models import Token

    net = Network(Client())
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    inbox = Inbox("http://inbox.test", token, client=httpx.Client(
        base_url="http://inbox.test", transport=httpx.MockTransport(net), headers={"Authorization": f"Token {token}"}))
    net.inbox = inbox
    return net


@pytest.fixture
def pauses(monkeypatch):
    """The client's backoff, recorded instead of slept."""
    slept = []
    monkeypatch.setattr(agui_inbox_client.time, "sleep", slept.append)
    return slept


def test_a_lost_answer_to_the_outcome_report_is_not_an_error_of_a_call_that_ran(network, demo, pauses):
    """The call ran and the inbox recorded its outcome, but the answer to the report was lost: the client
    sent it again and raised the inbox's 409 outcome_already_reported, so the decorated call that
    succeeded raised (and an agent that retries a failed tool would run it again)."""
    services.save_policy("crm.lookup", {"mode": "never", "approver_kind": "requester"}, demo["admin"])
    ran = []

    @require_approval("crm.lookup", inbox=network.inbox, schema=SCHEMA)
    def lookup(email):
        ran.append(email)
        return "found"

    network.faults.append(("POST", "/outcome/", "lost", None))
    assert lookup(email="a@example.com") == "found" and ran == ["a@example.com"]
    row = OutsideCall.objects.get()
    assert row.outcome == "succeeded" and row.request.status == "approved"
    assert [c for c in network.calls if c[1].endswith("/outcome/")] == [("POST", f"/api/approvals/{row.pk}/outcome/")] * 2


def test_a_report_of_another_outcome_than_the_one_recorded_still_raises(network, demo, pauses):
    services.save_policy("crm.lookup", {"mode": "never", "approver_kind": "requester"}, demo["admin"])
    approval = network.inbox.request("crm.lookup", {"email": "a@example.com"}, schema=SCHEMA)
    approval.report("failed", "CRM said 500")
    with pytest.raises(InboxError) as raised:
        approval.report("succeeded")
    assert raised.value.status_code == 409 and raised.value.body["code"] == "outcome_already_reported"
    assert OutsideCall.objects.get().outcome == "failed"


def test_waiting_goes_on_through_a_gateways_502_and_a_dropped_connection(network, demo, pauses):
    """An agent waiting (for hours, maybe) on a request while the inbox restarts behind its proxy got
    InboxError 502, or httpx's ConnectError, out of wait(): its wait was over though the request
    was still open in the inbox. It asks again, backing off, and gets the answer."""
    approval = network.inbox.request("crm.delete_contact", {"email": "a@example.com"}, schema=SCHEMA)
    assert approval.pending
    detail = f"/api/approvals/{approval.id}/"
    network.faults += [("GET", detail, 502, None),
                       ("GET", detail, "down", lambda: services.decide(approval.id, demo["rita"], "reject",
                                                                      feedback="not this one"))]
    approval.wait(timeout=600)
    assert approval.status == "rejected" and approval.feedback == "not this one"
    assert pauses == [0.5, 1.0]  # backing off between the tries


def test_waiting_still_raises_what_asking_again_cannot_mend(network, demo, pauses):
    approval = network.inbox.request("crm.delete_contact", {"email": "a@example.com"}, schema=SCHEMA)
    network.faults.append(("GET", f"/api/approvals/{approval.id}/", 404, None))
    with pytest.raises(InboxError) as raised:
        approval.wait(timeout=600)
    assert raised.value.status_code == 404 and pauses == []


def test_asking_goes_on_through_a_gateways_503_under_the_same_key(network, demo, pauses):
    """A proxy's 503 while the inbox restarts was raised at once, though the Idempotency-Key makes asking
    again safe (a lost answer already was asked again): one request, made on the next try."""
    network.faults += [("POST", "/api/approvals/", 503, None), ("POST", "/api/approvals/", "lost", None)]
    approval = network.inbox.request("crm.delete_contact", {"email": "a@example.com"}, schema=SCHEMA)
    assert approval.pending and OutsideCall.objects.get().pk == approval.id
    assert [m for m, p in network.calls] == ["POST"] * 3 and pauses == [0.5, 1.0]


def test_an_agent_that_stops_waiting_withdraws_its_request(network, demo, pauses):
    approval = network.inbox.request("crm.delete_contact", {"email": "a@example.com"}, schema=SCHEMA)
    approval.withdraw("the user left")
    assert approval.status == "cancelled" and approval.feedback == "the user left" and not approval.pending
    with pytest.raises(InboxError) as raised:  # settled: nothing left to withdraw
        approval.withdraw()
    assert raised.value.status_code == 409 and raised.value.body["code"] == "already_decided"
