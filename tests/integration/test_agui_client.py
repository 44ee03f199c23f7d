"""The official AG-UI client drives a live stack; ag-ui-validate judges every stream it received.

The stack is real processes: Daphne on a free port and a Celery worker (threads pool), both on
this test's database and Redis (NOTES.md trap 8: Daphne as a subprocess). The model is the fake
OpenAI-compatible server (tests/fake_llm.py) running in this process. `tests/agui_client/drive.mjs`
runs @ag-ui/client's HttpAgent through every scenario and asks this process, over its stdin, for
what only the server side can do: let an approval's deadline pass, release a held-back reply,
wait until the server has given up on a run its client abandoned.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.agui_stack import EVENT, _drive, _nulls, _seed, _tails, _validate

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def live_stack_env():
    return {"AGUI_ABANDONED_RUN_GRACE_SECONDS": "1"}  # the disconnect scenario waits this long


def _stop_requested(request):
    """The `disconnect` scenario's client is gone and nobody watches: the grace check asks the run to
    stop, or, when no worker has claimed it yet (a busy machine), cancels it before it starts."""
    from agents import services
    from agents.models import Run

    def given_up():
        return services.cancel_requested(request["runId"]) or \
            Run.objects.filter(pk=request["runId"], status=Run.Status.CANCELLED).exists()

    deadline = time.monotonic() + 30
    while not given_up():
        assert time.monotonic() < deadline, "the abandoned run was never asked to stop"
        time.sleep(0.05)


def test_official_client_drives_the_live_stack(live_stack, node):
    from agents.catalog.models import Subscription, Transfer
    from agents.models import Message, Run
    from approvals.models import ApprovalRequest

    live_stack["controls"]["abandoned"] = _stop_requested
    token = _seed()
    summary, log, returncode = _drive(live_stack, node, token)
    statuses = {name: s["status"] for name, s in summary["scenarios"].items()}
    assert returncode == 0 and summary["ok"], (
        f"{summary['failures']}\n{log[-6000:]}\n{_tails(live_stack['children'])}")
    assert set(statuses.values()) == {"passed"}, statuses
    assert len(statuses) == 13
    # the client logs nothing but the two HTTP errors that discovery asks for (401, 404)
    assert [(w["scenario"], w["text"][:32]) for w in summary["warnings"]] == [
        ("discovery", "Agent execution failed: HTTP 401"), ("discovery", "Agent execution failed: HTTP 404")]

    # --- what the scenarios did to the database
    scenario = summary["scenarios"]
    assert not Transfer.objects.exists()  # every transfer was cancelled or refused
    subscriptions = dict(Subscription.objects.values_list("ref", "status"))
    assert subscriptions == {"sub_123": "cancelled", "sub_456": "active", "sub_789": "active",
                             "sub_999": "cancelled", "sub_321": "cancelled"}
    decided = dict(ApprovalRequest.objects.values_list("pk", "status"))
    assert decided[scenario["error_codes"]["interruptId"]] == "cancelled"
    assert decided[scenario["resume_approve"]["interruptId"]] == "approved"
    assert decided[scenario["resume_reject"]["interruptId"]] == "rejected"
    assert decided[scenario["resume_edit"]["interruptId"]] == "modified"
    assert decided[scenario["expired"]["interruptId"]] == "expired"
    assert decided[scenario["multi_interrupt"]["transfer"]] == "cancelled"
    assert decided[scenario["multi_interrupt"]["cancel"]] == "approved"
    # the approval answered twice ran once
    assert Message.objects.filter(role="tool", tool_call_id=scenario["resume_approve"]["toolCallId"]).count() == 1
    assert Run.objects.get(pk=scenario["disconnect"]["runId"]).status == "cancelled"  # abandoned, nobody watching

    # --- every event received round-trips through its ag_ui.core model, unchanged
    lines = (live_stack["out"] / "events.jsonl").read_text().splitlines()
    assert len(lines) == summary["events"] > 100
    for line in lines:
        data = json.loads(line)["event"]
        assert json.loads(EVENT.validate_python(data).model_dump_json(by_alias=True)) == data
        assert type(data["timestamp"]) is int, data  # integer milliseconds
        assert not list(_nulls(data)), data  # optional fields are omitted, never null

    # --- ag-ui-validate on every complete stream, as it came off the wire
    checked, findings = 0, []
    for stream in summary["streams"]:
        if stream["status"] != 200 or not stream["contentType"].startswith("text/event-stream"):
            continue  # JSON errors (401, 404) are not streams
        if stream["aborted"]:
            assert stream["scenario"] == "disconnect"  # the client went away on purpose
            continue
        report = _validate(live_stack["out"] / stream["file"], stream["contentType"])
        checked += 1
        findings += [f"{stream['file']}: {d.rule} {d.severity}: {d.message}" for d in report.diagnostics
                     if d.severity in ("error", "warning")]
    complete = [s for s in summary["streams"] if s["status"] == 200 and s["contentType"].startswith("text/event-stream")]
    assert findings == [], "\n".join(findings)
    assert checked == len(complete) - 1 >= 25  # all but the one the client walked away from
    print(f"official client: {len(statuses)} scenarios passed, {len(summary['streams'])} HTTP responses, "
          f"{summary['events']} events round-tripped, {checked} streams validated (0 findings)")
