"""Scale-out: several Daphne processes share one worker pool, PostgreSQL (or the test database)
and Redis, and a client may talk to any of them.

Two Daphne processes and a Celery worker, each a process of its own (the live stack plus a second
Daphne on the same settings). A run is started through web 1's REST API, watched on web 2's
WebSocket and decided through web 2's decide API: the socket must get every event of the thread's
stream, in order, from the run's start through its pause to the continuation's end. This is the
path of a deployment behind a proxy without sticky sessions; not a measure of speed (bench/scale.py).
"""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.sync.client import connect

from tests.helpers import next_event_sync
from tests.integration.agui_stack import ROOT, _seed, _tails, devstack

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

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
