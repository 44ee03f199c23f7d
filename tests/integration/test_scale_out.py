"""Scale-out: several Daphne processes share one worker pool, PostgreSQL (or the test database)
and Redis, and a client may talk to any of them.

Two Daphne processes and a Celery worker, each a process of its own (the live stack plus a second
Daphne on the same settings). A run is started through web 1's REST API, watched on web 2's
WebSocket and decided through web 2's decide API: the socket must get every event of the thread's
stream, in order, from the run's start through its pause to the continuation's end. The same for the
other paths README "Running several processes" names: an AG-UI stream on web 1 that follows a run
paused on finance's review while the decision is made through web 2; an AG-UI resume sent to web 2
for an interrupt web 1 gave; a reviewer's inbox socket on web 2 told of a request a worker filed and
of its decision through web 1. This is the path of a deployment behind a proxy without sticky
sessions; not a measure of speed (bench/scale.py).
"""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.sync.client import connect

from tests.helpers import next_event_sync
from tests.integration.agui_stack import ROOT, _seed, _tails, devstack

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def live_stack_env():
    # an AG-UI response follows a run paused on a group's review (long enough for a decision here)
    return {"AGUI_SSE_REVIEW_WAIT_SECONDS": "60"}

TRANSFER = "Transfer $1 from account 1234567890 to account 0987654321"


@pytest.fixture
def second_web(live_stack):
    """Another Daphne on the live stack's settings (database, Redis, queue, secret)."""
    port = devstack.free_port()
    cmd = dict(devstack.stack_commands("127.0.0.1", str(port), "", pool="threads", concurrency="1"))["web"]
    child = devstack.spawn("web2", cmd, env=live_stack["env"], cwd=ROOT, log_path=live_stack["logs"] / "web2.log")
    url = f"http://127.0.0.1:{port}"
    try:
        devstack.wait_healthy(url, [child])
        yield url
    except devstack.NotHealthy as exc:
        pytest.fail(f"{exc}\n{_tails([child])}", pytrace=False)
    finally:
        devstack.stop_children([child], timeout=10)


def read_until_end(sock, frames):
    """Frames (parsed) until RUN_FINISHED / RUN_ERROR."""
    while True:
        event = next_event_sync(sock)
        frames.append(event)
        if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return event


def test_a_socket_on_web_2_sees_every_event_of_a_run_started_on_web_1_and_decided_on_web_2(live_stack, second_web):
    from django.contrib.auth.models import User
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from agents.models import Run
    from agents.runtime.events import stream_key
    from agui_project.redis_client import redis_client
    from approvals.models import ApprovalRequest

    web1, web2 = live_stack["url"], second_web
    assert web1 != web2
    alice_token = _seed()
    finn_token = Token.objects.get_or_create(user=User.objects.get(username="finn"))[0].key
    browser = Client()
    browser.force_login(User.objects.get(username="alice"))  # a database session: valid on every web process
    alice = {"Authorization": f"Token {alice_token}"}

    with httpx.Client(timeout=30) as http:
        thread_id = http.post(f"{web1}/api/threads/", json={"agent": "banking"}, headers=alice).json()["id"]
        ws_url = web2.replace("http://", "ws://") + f"/ws/threads/{thread_id}/"
        headers = {"Cookie": f"sessionid={browser.cookies['sessionid'].value}", "Origin": web2}
        with connect(ws_url, additional_headers=headers, open_timeout=30) as sock:
            while True:  # a fresh socket's snapshots; the approvals card comes last
                event = next_event_sync(sock)
                if event["type"] == "CUSTOM" and event["name"] == "approvals":
                    break
            r = http.post(f"{web1}/api/threads/{thread_id}/messages/", json={"content": TRANSFER}, headers=alice)
            assert r.status_code in (200, 201, 202), r.text
            run_id = r.json()["run_id"]
            frames = []
            paused = read_until_end(sock, frames)
            assert paused["type"] == "RUN_FINISHED" and paused["runId"] == run_id
            # paused on finance's review (no interrupt for alice's client: she is not the one to answer)
            assert Run.objects.get(pk=run_id).status == Run.Status.INTERRUPTED
            request = ApprovalRequest.objects.get(run_ref=run_id)
            r = http.post(f"{web2}/api/approvals/{request.pk}/decide/", json={"decision": "approve"},
                          headers={"Authorization": f"Token {finn_token}"})
            assert r.status_code == 200, r.text
            finished = read_until_end(sock, frames)

    continuation = Run.objects.get(parent_run_id=run_id)
    assert finished["type"] == "RUN_FINISHED" and finished["runId"] == continuation.pk, finished
    results = [e for e in frames if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and "Transferred 1.00 USD" in results[0]["content"], results
    # every event the runs wrote to the thread's stream, in order, up to the continuation's end
    stream = [json.loads(fields[b"e"]) for _id, fields in redis_client().xrange(stream_key(thread_id))]
    ends = [i for i, e in enumerate(stream) if e["type"] == "RUN_FINISHED" and e.get("runId") == continuation.pk]
    assert ends, [e["type"] for e in stream]
    stream = stream[:ends[0] + 1]
    # before the run's events the socket may still get the tail of its snapshot (CUSTOM message_info, ...)
    lead = frames[:len(frames) - len(stream)]
    assert all(e["type"] == "CUSTOM" and e["name"] != "approval_status" for e in lead), lead
    assert frames[len(lead):] == stream, ([e["type"] for e in frames], [e["type"] for e in stream])
    assert [e["runId"] for e in frames if e["type"] == "RUN_STARTED"] == [run_id, continuation.pk]


def sse_events(response):
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


def agui_body(thread_id, run_id, messages, **more):
    return {"threadId": thread_id, "runId": run_id, "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": messages, **more}


def test_an_agui_stream_on_web_1_follows_a_review_decided_through_web_2(live_stack, second_web):
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from agents.models import Run
    from approvals.models import ApprovalRequest

    web1, web2 = live_stack["url"], second_web
    alice = {"Authorization": f"Token {_seed()}", "Accept": "text/event-stream"}
    finn = {"Authorization": f"Token {Token.objects.get_or_create(user=User.objects.get(username='finn'))[0].key}"}
    body = agui_body("scale-sse", "scale-sse-1", [{"id": "scale-sse-m1", "role": "user", "content": TRANSFER}])
    got = []
    with httpx.Client(timeout=60) as http, http.stream("POST", f"{web1}/agui/banking/", json=body, headers=alice) as r:
        assert r.status_code == 200
        for event in sse_events(r):
            got.append(event)
            if event["type"] == "RUN_FINISHED" and event["runId"] == "scale-sse-1":  # paused: the stream stays open
                request = ApprovalRequest.objects.get(run_ref="scale-sse-1")
                assert request.approver_group.name == "finance"
                answer = http.post(f"{web2}/api/approvals/{request.pk}/decide/", json={"decision": "approve"},
                                   headers=finn)
                assert answer.status_code == 200, answer.text
            if event["type"] in ("RUN_FINISHED", "RUN_ERROR") and event["runId"] != "scale-sse-1":
                break
    continuation = Run.objects.get(parent_run_id="scale-sse-1")
    starts = [(e["runId"], e.get("parentRunId")) for e in got if e["type"] == "RUN_STARTED"]
    assert starts == [("scale-sse-1", None), (continuation.pk, "scale-sse-1")], starts
    assert got[-1] == {**got[-1], "type": "RUN_FINISHED", "runId": continuation.pk}
    results = [e["content"] for e in got if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and "Transferred 1.00 USD" in results[0], results  # once: no event twice, none lost
    assert continuation.status == Run.Status.SUCCEEDED


def test_a_resume_sent_to_web_2_answers_the_interrupt_web_1_gave(live_stack, second_web):
    from agents.models import Run

    web1, web2 = live_stack["url"], second_web
    alice = {"Authorization": f"Token {_seed()}", "Accept": "text/event-stream"}
    history = [{"id": "scale-res-m1", "role": "user", "content": "Cancel my subscription sub_456"}]
    with httpx.Client(timeout=60) as http:
        first = list(sse_events(http.post(f"{web1}/agui/banking/", json=agui_body("scale-res", "scale-res-1", history),
                                          headers=alice)))
        interrupts = first[-1]["outcome"]["interrupts"]
        assert first[-1]["type"] == "RUN_FINISHED" and len(interrupts) == 1, first[-1]
        resume = [{"interruptId": interrupts[0]["id"], "status": "resolved", "payload": {"approved": True}}]
        second = list(sse_events(http.post(f"{web2}/agui/banking/", headers=alice,
                                           json=agui_body("scale-res", "scale-res-2", history, resume=resume))))
    assert [e["type"] for e in second][0] == "RUN_STARTED" and second[-1]["type"] == "RUN_FINISHED", second
    results = [e["content"] for e in second if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and "sub_456" in results[0] and "cancelled" in results[0], results
    assert Run.objects.get(pk="scale-res-2").status == Run.Status.SUCCEEDED


def test_an_inbox_socket_on_web_2_hears_a_request_filed_by_a_worker_and_decided_through_web_1(live_stack, second_web):
    from django.contrib.auth.models import User
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from approvals.models import ApprovalRequest

    web1, web2 = live_stack["url"], second_web
    alice = {"Authorization": f"Token {_seed()}"}
    finn_user = User.objects.get(username="finn")
    finn = {"Authorization": f"Token {Token.objects.get_or_create(user=finn_user)[0].key}"}
    browser = Client()
    browser.force_login(finn_user)
    headers = {"Cookie": f"sessionid={browser.cookies['sessionid'].value}", "Origin": web2}
    with httpx.Client(timeout=30) as http, connect(web2.replace("http://", "ws://") + "/ws/inbox/",
                                                   additional_headers=headers, open_timeout=30) as sock:
        thread_id = http.post(f"{web1}/api/threads/", json={"agent": "banking"}, headers=alice).json()["id"]
        r = http.post(f"{web1}/api/threads/{thread_id}/messages/", json={"content": TRANSFER}, headers=alice)
        assert r.status_code in (200, 201, 202), r.text
        notices = []
        while not any(n.get("type") == "approval.requested" for n in notices):
            notices.append(json.loads(sock.recv(timeout=30)))
        request = ApprovalRequest.objects.get(thread_ref=thread_id)
        assert notices[-1]["approval"]["id"] == str(request.pk)
        r = http.post(f"{web1}/api/approvals/{request.pk}/decide/", json={"decision": "approve"}, headers=finn)
        assert r.status_code == 200, r.text
        while notices[-1].get("type") != "approval.decided":
            notices.append(json.loads(sock.recv(timeout=30)))
    assert notices[-1]["approval"]["id"] == str(request.pk) and notices[-1]["approval"]["status"] == "approved"
