"""The conversation beside a request cut each message at 1,000 characters without a word: alice's
"Refund order 12345 ... [a long complaint] ... but do NOT refund it, only check" read as a plain
request to refund, the sentence that said otherwise gone. What is cut is said, and how much."""

import pytest

from agents.models import Message, Thread
from agents.runtime.runner import conversation_excerpt
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db

LONG = "Refund order 12345, it arrived broken. " + "It was a gift and I am upset. " * 40 + \
    "But do NOT refund it, only check the order."


def test_a_cut_message_says_it_is_cut(login, demo):
    thread = Thread.objects.create(owner=demo["alice"], agent="support")
    Message.objects.create(thread=thread, seq=1, role="user", content=LONG)
    Message.objects.create(thread=thread, seq=2, role="assistant", content="I'll refund it.")
    excerpt = conversation_excerpt(thread)
    assert excerpt[0]["content"] == LONG[:1000] and excerpt[0]["cut"] == len(LONG) - 1000
    assert "cut" not in excerpt[1]
    req = make_request("alice", tool="submit_refund", agent="support", group="support", thread=thread.pk,
                       excerpt=excerpt, arguments={"order_id": "12345", "amount": 10, "refund_description": "x"})
    for url in (f"/inbox/{req.pk}/", f"/inbox/{req.pk}/?partial=preview"):
        page = login("rita").get(url).content.decode()
        assert f"… {len(LONG) - 1000} more characters" in page, url
