"""Operator pages name a thread by what its person wrote first, never by its id: the inbox row,
the request page and the inbox's thread filter (the runner records the title beside the excerpt)."""

import json
import re

import pytest

from agents import services
from agents.models import Run
from approvals.models import ApprovalRequest
from tests.helpers import run_prompt

pytestmark = pytest.mark.django_db(transaction=True)


def shown(html):
    """The page's text as a person reads it: no tags, no attributes."""
    return re.sub(r"<[^>]+>", " ", html)


def test_the_inbox_and_the_request_page_name_the_thread_not_its_id(demo, login, fake_llm):
    """Inbox rows showed "thread 6f1c2a3b-7d4…" and the request page the thread's and the run's
    full ids, where a reviewer needs to know which conversation it is."""
    fake_llm.push({"tool_calls": [{"id": "call_cs", "name": "cancel_subscription",
                                   "arguments": json.dumps({"subscription_id": "sub_123"})}]})
    thread = services.create_thread(demo["alice"], "banking")
    paused = run_prompt(thread, demo["alice"], "Cancel my subscription sub_123")
    assert paused.status == Run.Status.INTERRUPTED
    req = ApprovalRequest.objects.get(thread_ref=thread.pk)
    admin = login("admin")

    row = admin.get("/inbox/?scope=all").content.decode()
    row = row[row.index(f'data-approval-id="{req.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "Cancel my subscription sub_123" in shown(row) and thread.pk[:8] not in shown(row), row

    page = shown(admin.get(f"/inbox/{req.pk}/").content.decode())
    assert "Cancel my subscription sub_123" in page
    assert thread.pk not in page and paused.pk not in page

    chip = admin.get(f"/inbox/?scope=all&status=all&thread={thread.pk}").content.decode()
    chip = chip[chip.index('class="chip-filter"'):][:400]
    assert "Cancel my subscription sub_123" in chip and thread.pk not in shown(chip), chip


def test_a_request_of_no_known_title_still_names_no_id(login):
    from tests.inbox_helpers import make_request

    req = make_request("alice", thread="6f1c2a3b-7d4e-4b7a-9a51-0c7e2f3d4a10")
    row = login("finn").get("/inbox/").content.decode()
    row = row[row.index(f'data-approval-id="{req.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "all its requests" in shown(row) and "6f1c2a3b" not in shown(row), row
    page = shown(login("finn").get(f"/inbox/{req.pk}/").content.decode())
    assert "6f1c2a3b" not in page and req.run_ref not in page
