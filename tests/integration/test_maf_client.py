"""Microsoft Agent Framework's AG-UI client (`Agent` over `AGUIChatClient`) drives a live stack.

MAF's client cannot share the project venv (agent-framework-ag-ui 1.7 needs ag-ui-protocol<0.2),
so it runs in .venv-maf (tests/maf_client/requirements.txt, built by `make test`) as a subprocess:
tests/maf_client/drive.py for the scenarios, and the README's own snippet, so that it cannot drift.
This process checks what the scenarios left in the database and what the model was sent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from tests.integration.agui_stack import CLIENT_DIR, ROOT, _seed, _tails, _text

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MAF_DIR = ROOT / "tests" / "maf_client"
MAF_PYTHON = ROOT / ".venv-maf" / "bin" / "python"
TIMEOUT = 300


@pytest.fixture
def maf_python():
    """.venv-maf's python, with agent-framework-ag-ui installed; else skip saying why (fail on CI)."""
    if not (ROOT / ".venv-maf" / ".installed").exists():
        reason = (".venv-maf is missing or incomplete: `make test` builds it from "
                  "tests/maf_client/requirements.txt (python3 -m venv + pip install -r)")
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it", pytrace=False)
        pytest.skip(reason)
    return str(MAF_PYTHON)


def echo(body):
    """The fake model's answer to a "[maf] ..." turn: "echo: <the turn>"."""
    last = body["messages"][-1]
    text = _text(last.get("content")) if last["role"] == "user" else ""
    # its JSON with non-ASCII as UTF-8, as servers may send it: U+2028 and the like raw in a data line
    return {"text": f"echo: {text}", "raw_unicode": True} if text.startswith("[maf]") else None


def run_client(stack, argv, cwd, env=None):
    """Run a client program against the stack to the end: (the JSON summary on its last stdout
    line or None, stdout, stderr, exit code). Fails with the servers' logs past TIMEOUT."""
    env = dict(os.environ, AGUI_BASE_URL=stack["url"], AGUI_URL=stack["url"], PYTHONUNBUFFERED="1", **(env or {}))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{argv[:2]} did not finish in {TIMEOUT} s\n{exc.stderr}\n{_tails(stack['children'])}", pytrace=False)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    return (json.loads(last) if last.startswith("{") else None), proc.stdout, proc.stderr, proc.returncode


def snippet(name):
    """The fenced code block after `<!-- snippet: name -->` in README.md."""
    found = re.search(rf"<!-- snippet: {name} -->\n```\w+\n(.*?)\n```\n", (ROOT / "README.md").read_text(), re.S)
    assert found, f"README.md has no snippet {name!r}"
    return found.group(1)


def user_turns(request):
    return [_text(m.get("content")) for m in request["messages"] if m["role"] == "user"]


def test_agent_framework_client_drives_the_live_stack(maf_python, live_stack, fake_llm):
    from django.contrib.auth.models import User

    from agents import services
    from agents.catalog.models import Subscription
    from agents.models import Message
    from approvals.models import ApprovalRequest

    live_stack["model"].handlers.append(echo)
    token = _seed()
    foreign = services.create_thread(User.objects.get(username="bob"), "banking", thread_id="maf-bobs-thread")
    summary, out, err, code = run_client(live_stack, [maf_python, "drive.py"], MAF_DIR,
                                         {"AGUI_TOKEN": token, "AGUI_FOREIGN_THREAD": foreign.pk})
    assert summary and code == 0 and summary["ok"], (
        f"{summary and summary['failures']}\n{err[-6000:]}\n{_tails(live_stack['children'])}")
    scenario = summary["scenarios"]
    assert set(scenario) == {"three_turns", "server_tool", "approval", "errors", "line_breaks"}

    def stored(thread_id, role="user"):
        return list(Message.objects.filter(thread_id=thread_id, role=role).order_by("seq")
                    .values_list("content", flat=True))

    # (a) each turn stored once, although MAF resent the whole history with new ids every turn;
    # the model saw each turn once, in order
    turns = ["[maf] turn 1", "[maf] turn 2", "[maf] turn 3"]
    assert stored(scenario["three_turns"]["threadId"]) == turns
    last = [r for r in fake_llm.requests if user_turns(r)[-1:] == ["[maf] turn 3"]]
    assert len(last) == 1 and user_turns(last[0]) == turns
    assert [m["content"] for m in last[0]["messages"] if m["role"] == "assistant"] == ["echo: [maf] turn 1",
                                                                                        "echo: [maf] turn 2"]

    # (b) the server's tool result is stored once and the model got it right after its call
    tool = scenario["server_tool"]
    assert stored(tool["threadId"]) == ["What is the balance of account 1234567890?", "[maf] after the tool"]
    assert Message.objects.filter(thread_id=tool["threadId"], role="tool", tool_call_id=tool["toolCallId"]).count() == 1
    [after] = [r for r in fake_llm.requests if user_turns(r)[-1:] == ["[maf] after the tool"]]
    assert [m["role"] for m in after["messages"]] == ["system", "user", "assistant", "tool", "assistant", "user"]

    # (c) the requester approved the cancellation over MAF's resume: it ran, once
    approval = scenario["approval"]
    assert ApprovalRequest.objects.get(pk=approval["interruptId"]).status == "approved"
    assert Subscription.objects.get(ref="sub_456").status == "cancelled"
    assert stored(approval["threadId"]) == ["Please cancel subscription sub_456", "[maf] after the approval"]
    assert Message.objects.filter(thread_id=approval["threadId"], role="tool").count() == 1

    # (d) refusals are readable sentences in MAF, not ResponseNotRead; nothing reached bob's thread
    assert "already taken" in scenario["errors"]["forbidden"]
    assert "no-such-interrupt" in scenario["errors"]["unknownInterrupt"]
    # what an HTTP error looks like in MAF (the 401 before authentication): the body is lost
    assert scenario["errors"]["http401"].startswith("ResponseNotRead")
    assert not Message.objects.filter(thread_id=foreign.pk).exists()

    # (e) line separators inside the text: read from the model's stream, stored and relayed whole
    separated = "[maf] one\u2028two\u2029three\x85four"
    assert stored(scenario["line_breaks"]["threadId"]) == [separated]
    assert stored(scenario["line_breaks"]["threadId"], "assistant") == [f"echo: {separated}"]

    # every request the model got was a valid conversation (the fake_llm fixture also fails on any)
    assert fake_llm.rejected == []


def readme_run_ok(stack, argv, cwd, prompts):
    """Run a README snippet as alice; it answered each prompt once, in one thread, and approved."""
    from agents.catalog.models import Subscription
    from agents.models import Message, Thread
    from approvals.models import ApprovalRequest

    token = _seed()
    _, out, err, code = run_client(stack, argv, cwd, {"AGUI_TOKEN": token})
    assert code == 0 and "[error]" not in out, f"{out}\n{err[-6000:]}\n{_tails(stack['children'])}"
    assert "[approve?] Cancel subscription sub_123 (it stops at once and is not refunded)" in out, out
    assert "Subscription sub_123 (Premium) is cancelled." in out, out  # the model's summary of the result
    assert Subscription.objects.get(ref="sub_123").status == "cancelled"
    [thread] = Thread.objects.filter(owner__username="alice")
    assert list(Message.objects.filter(thread=thread, role="user").values_list("content", flat=True)) == prompts
    assert list(ApprovalRequest.objects.filter(thread_ref=thread.pk).values_list("status", flat=True)) == ["approved"]
    print(out)  # what a person running the snippet sees
    return out


def test_the_readmes_agent_framework_snippet_runs(maf_python, live_stack):
    out = readme_run_ok(live_stack, [maf_python, "-c", snippet("maf")], MAF_DIR,
                        ["What is the balance of account 1234567890?", "Cancel subscription sub_123"])
    # the demo model tells the person the tool's answer, the amount as their language writes it
    assert "Account 1234567890 holds 5,432.10 USD." in out


def test_the_readmes_agui_client_snippet_runs(node, live_stack):
    readme_run_ok(live_stack, [node, "--input-type=module", "-e", snippet("agui-client")], CLIENT_DIR,
                  ["Cancel subscription sub_123"])
