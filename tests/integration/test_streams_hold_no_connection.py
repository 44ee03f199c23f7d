"""Open AG-UI streams hold no database connection while they wait on Redis (agents/agui/relay.py
`released`): each kept the one its POST had used until it ended, up to AGUI_SSE_REVIEW_WAIT_SECONDS
for a run paused on a group's review, so as many open streams as the web process's pool
(AGUI_DB_POOL_SIZE) made every other request of that process wait 10 s for a 503, and new runs
fail. With a pool of 2, four requesters waiting on finance leave the API answering."""

import asyncio
import json
import uuid

import httpx
import pytest
from django.conf import settings

from tests.integration.agui_stack import _seed

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow,
              pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                                 reason="a bounded pool of connections is PostgreSQL's (SQLite's keeps closed ones)")]
STREAMS = 4


@pytest.fixture
def live_stack_env():
    return {"AGUI_DB_POOL_SIZE": "2", "AGUI_SSE_REVIEW_WAIT_SECONDS": "60"}


async def _paused_stream(client, token, seen_end):
    """A transfer for finance's review; returns once the paused run's RUN_FINISHED came, leaving
    the response open (it follows the review for a minute)."""
    thread_id = f"thread-{uuid.uuid4()}"
    body = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": f"msg-{uuid.uuid4()}", "role": "user",
                                                "content": "Transfer $5 from account 1234567890 to account 0987654321"}]}
    request = client.build_request("POST", "/agui/banking/", json=body, headers={
        "Authorization": f"Bearer {token}", "Accept": "text/event-stream"})
    response = await client.send(request, stream=True)
    assert response.status_code == 200, await response.aread()
    async for line in response.aiter_lines():
        if line.startswith("data: ") and json.loads(line[6:])["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            assert json.loads(line[6:])["type"] == "RUN_FINISHED", line
            seen_end.set()
            break
    return response


def test_streams_waiting_on_a_review_leave_the_pool_to_other_requests(live_stack):
    token = _seed()

    async def scenario():
        async with httpx.AsyncClient(base_url=live_stack["url"], timeout=30) as client:
            ends = [asyncio.Event() for _ in range(STREAMS)]
            opened = await asyncio.gather(*(_paused_stream(client, token, end) for end in ends))
            assert all(end.is_set() for end in ends)
            try:
                # the streams are open, following their reviews: other requests get a connection
                listed = await client.get("/api/approvals/?status=pending",
                                          headers={"Authorization": f"Token {token}"}, timeout=5)
                assert listed.status_code == 200, listed.text
                health = await client.get("/healthz", timeout=5)
                assert health.status_code == 200 and health.json()["db"] == "ok", health.text
                another = await _paused_stream(client, token, asyncio.Event())  # a new run starts too
                opened.append(another)
            finally:
                for response in opened:
                    await response.aclose()

    asyncio.run(scenario())
