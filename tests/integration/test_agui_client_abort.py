"""@ag-ui/client's abortRun() mid-run against a live stack (tests/agui_client/scenarios/abort.mjs):
the client's next message supersedes the abandoned run, which ends cancelled, and is answered."""

import pytest

from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
LONG_TEXT = " ".join(f"Savings fact number {i}." for i in range(150))  # about ten seconds at 50 ms a piece


@pytest.fixture
def live_stack_env():
    return {"AGUI_ABANDONED_RUN_GRACE_SECONDS": "-1"}  # only the new message may stop the abandoned run here


def _text(message):
    content = message.get("content")
    return content if isinstance(content, str) else ""


def test_a_message_after_abort_run_is_answered_and_the_abandoned_run_ends_cancelled(live_stack, node):
    from agents.models import Message, Run

    def replies(body):
        last = _text(body["messages"][-1])
        if last.startswith("[long]"):
            return {"text": LONG_TEXT, "delay": 0.05}
        if last == "Just the short version, please":
            return {"text": "The short version: savings accounts earn interest."}
        return None

    live_stack["model"].handlers.append(replies)
    summary = drive_ok(live_stack, node, ["abort"])
    scenario = summary["scenarios"]["abort"]

    assert Run.objects.get(pk=scenario["abandonedRunId"]).status == Run.Status.CANCELLED
    assert Run.objects.get(pk=scenario["runId"]).status == Run.Status.SUCCEEDED
    stored = list(Message.objects.filter(thread_id=scenario["threadId"]).order_by("seq")
                  .values_list("role", "run_id", "content"))
    assert [(role, run) for role, run, _ in stored] == [
        ("user", scenario["abandonedRunId"]), ("assistant", scenario["abandonedRunId"]),
        ("user", scenario["runId"]), ("assistant", scenario["runId"])]
    assert LONG_TEXT.startswith(stored[1][2]) and 0 < len(stored[1][2]) < len(LONG_TEXT)  # stopped mid-stream
    assert stored[3][2] == "The short version: savings accounts earn interest."
    assert check_streams(live_stack, summary, aborted=["abort"]) == 1


def test_a_client_that_comes_back_mid_answer_keeps_its_question(live_stack, node):
    """runAgent() with nothing new while the answer streams: its MESSAGES_SNAPSHOT left out the question
    the live run answers, and @ag-ui/client's list became [assistant] (on a first turn it was emptied)."""
    from agents.models import Run

    def replies(body):
        return {"text": LONG_TEXT, "delay": 0.05} if _text(body["messages"][-1]).startswith("[long]") else None

    live_stack["model"].handlers.append(replies)
    scenario = drive_ok(live_stack, node, ["rejoin"])["scenarios"]["rejoin"]
    assert scenario["answer"] == LONG_TEXT  # the whole answer, once
    assert list(Run.objects.filter(thread_id=scenario["threadId"]).values_list("pk", "status")) == [
        (scenario["runId"], Run.Status.SUCCEEDED)]  # not a new turn
