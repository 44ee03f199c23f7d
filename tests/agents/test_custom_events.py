"""One approval_response: the thread socket (the stream's notice) and an AG-UI resume get the same value."""

import json
import uuid

import pytest
from asgiref.sync import async_to_sync

from agents.agui import custom_events
from agents.runtime import events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


async def _collect(content):
    return b"".join([chunk async for chunk in content])


def post_sse(client, token, thread_id, **body):
    payload = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "messages": [], "state": {}, "tools": [],
               "context": [], "forwardedProps": {}, **body}
    resp = client.post("/agui/banking/", json.dumps(payload), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 200
    raw = async_to_sync(_collect)(resp.streaming_content).decode()
    return [json.loads(f[len("data: "):]) for f in raw.split("\n\n") if f.startswith("data: ")]


def test_approval_response_has_one_shape_on_both_streams(celery_worker_live, fake_llm, client, demo):
    from rest_framework.authtoken.models import Token

    from agents.catalog.models import Subscription

    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    Subscription.objects.create(ref="sub_999", owner=demo["alice"], plan="Student")  # an edit names hers
    thread_id = f"thread-{uuid.uuid4()}"
    message = {"id": f"msg-{uuid.uuid4()}", "role": "user", "content": "Cancel my subscription sub_789"}
    first = post_sse(client, token, thread_id, messages=[message])
    interrupt = first[-1]["outcome"]["interrupts"][0]
    resumed = post_sse(client, token, thread_id, resume=[{
        "interruptId": interrupt["id"], "status": "resolved",
        "payload": {"approved": True, "arguments": {"subscription_id": "sub_999"}},
    }])
    assert resumed[-1]["type"] == "RUN_FINISHED"
    over_sse = [e["value"] for e in resumed if e["type"] == "CUSTOM" and e["name"] == custom_events.APPROVAL_RESPONSE]
    stream = events.redis_client().xrange(events.stream_key(thread_id))
    on_socket = [e["value"] for e in (json.loads(fields[b"e"]) for _id, fields in stream)
                 if e["type"] == "CUSTOM" and e["name"] == custom_events.APPROVAL_RESPONSE]
    assert len(over_sse) == 1 and len(on_socket) == 1
    assert over_sse[0] == on_socket[0]
    value = over_sse[0]
    assert value["approvalId"] == interrupt["id"] and value["toolCallId"] == interrupt["toolCallId"]
    assert value["approved"] is True and value["status"] == "modified"
    assert value["arguments"] == {"subscription_id": "sub_999"}  # what runs
    assert value["requestedArguments"]["subscription_id"] == "sub_789"  # what the model asked for
