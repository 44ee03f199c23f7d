"""@ag-ui/client against a live stack: state from a stock client (no version), text sent with a
resume, and GET /agui/<agent> discovery (tests/agui_client/scenarios/state_resume.mjs)."""

import pytest

from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _text(message):
    content = message.get("content")
    return content if isinstance(content, str) else ""


def test_stock_client_state_resume_text_and_capabilities(live_stack, node):
    from agents.models import Message, Thread
    from agents.runtime import statesync
    from state import services as state_services

    def set_title(request):  # what the browser's state editor does (a person's change, with its version)
        thread = Thread.objects.get(pk=request["threadId"])
        data, version = state_services.snapshot(thread.state_key)
        statesync.replace_user_state(thread, thread.owner, {"recipe": {**data["recipe"], "title": request["title"]}},
                                     version)

    def plan_question(body):  # the question asked with the resume, answered after the result
        messages = body["messages"]
        if _text(messages[-1]) == "Also, which plan was it?" and messages[-2]["role"] == "tool":
            return {"text": "It was the Basic plan."}
        return None

    live_stack["controls"]["set_title"] = set_title
    live_stack["model"].handlers.append(plan_question)
    summary = drive_ok(live_stack, node, ["state_without_version", "resume_with_text", "capabilities"])
    scenario = summary["scenarios"]

    thread = Thread.objects.get(pk=scenario["state_without_version"]["threadId"])
    data, version = state_services.snapshot(thread.state_key)
    assert data["recipe"]["title"] == "Changed again" and data["recipe"]["cooking_time"] == "45 min"
    assert version == 4  # the run's recipe, the client's edit, two from the browser; the stale edit not taken
    stored = list(Message.objects.filter(thread_id=scenario["resume_with_text"]["threadId"]).values_list("role", "id"))
    assert [r for r, _ in stored] == ["user", "assistant", "tool", "user", "assistant"]
    assert stored[3][1] == scenario["resume_with_text"]["messageId"]
    assert check_streams(live_stack, summary) >= 6
