"""Microsoft Agent Framework's AG-UI client (`Agent` over `AGUIChatClient`) against a live stack whose
model misbehaves (tests/maf_client/drive.py `run_ends`, `ids_reused`; the model's replies are
tests/integration/test_agui_client_run_ends.py's): each failed run is one readable error in MAF and
the next turn, which resends the failed run's calls and results under new ids, is answered; a reused
call id is replaced consistently."""

from __future__ import annotations

import pytest

from tests.integration.agui_stack import _seed, _tails
from tests.integration.test_agui_client_run_ends import misbehaving_model
from tests.integration.test_maf_client import MAF_DIR, maf_python, run_client  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def live_stack_env():
    return {"AGUI_MAX_TURNS": "3"}


def test_agent_framework_hears_how_a_misbehaving_models_runs_end(maf_python, live_stack, fake_llm):  # noqa: F811
    from agents.models import Run, ToolCall

    live_stack["model"].handlers.append(misbehaving_model)
    summary, out, err, code = run_client(live_stack, [maf_python, "drive.py", "run_ends,ids_reused,frontend_tool"], MAF_DIR,
                                         {"AGUI_TOKEN": _seed()})
    assert summary and code == 0 and summary["ok"], (
        f"{summary and summary['failures']}\n{err[-6000:]}\n{_tails(live_stack['children'])}")
    ends = summary["scenarios"]["run_ends"]
    for code_ in ("turn_limit", "answer_cut", "model_error"):
        runs = Run.objects.filter(thread_id=ends[code_]["threadId"]).order_by("created_at")
        assert [(r.status, r.error_code) for r in runs] == [("failed", code_), ("succeeded", "")], code_
    reused = summary["scenarios"]["ids_reused"]
    assert list(ToolCall.objects.filter(thread_id=reused["threadId"]).order_by("created_at")
                .values_list("pk", flat=True)) == reused["ids"]
    assert fake_llm.rejected == []  # every conversation the model got was valid
