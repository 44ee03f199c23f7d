"""The ops agent (seed 003): sandboxed tools acting for real, escapes refused before policy is asked,
the offline model's demo prompts, and every approval mode end to end on a live worker."""

import os

import pytest
from django.core import mail

from agents import llm
from agents.catalog import get_agent
from agents.catalog.ops import ALLOWED_COMMANDS, execute_command, normalise, real_path
from agents.models import Message, ToolCall
from agents.tools import ToolContext, ToolError
from approvals.models import ApprovalRequest
from approvals.registry import ArgumentsInvalid
from tests.conftest import wait_for_event

AGENT = get_agent("ops")


@pytest.fixture
def sandbox(settings, tmp_path):
    root = tmp_path / "sandbox"
    root.mkdir()
    settings.AGUI_SANDBOX_DIR = root
    (tmp_path / "outside.txt").write_text("secret")
    return root


def run(tool_name, **arguments):
    t = AGENT.tool(tool_name)
    return t.run(ToolContext(user=None, thread=None, run=None, tool_call_id="call-test"), t.validate(arguments))


ESCAPES = [
    ("read_file", {"path": "../outside.txt"}),
    ("read_file", {"path": "/../outside.txt"}),
    ("read_file", {"path": "a/../../outside.txt"}),
    ("write_file", {"path": "../../etc/cron.d/x", "content": "boom"}),
    ("delete_file", {"path": "/.."}),
    ("list_files", {"path": "link-out"}),  # a symbolic link to the directory above the sandbox
    ("read_file", {"path": "link-out/outside.txt"}),
    ("rename_file", {"source": "notes.txt", "destination": "../stolen.txt"}),
    ("delete_directory", {"path": "../"}),
    ("read_file", {"path": "nul\x00byte"}),
    ("read_file", {"path": "..\\outside.txt"}),
    ("execute_command", {"command": "cat ../outside.txt"}),
    ("execute_command", {"command": "cat link-out/outside.txt"}),
    ("execute_command", {"command": "grep --file=../outside.txt x"}),
]


@pytest.mark.parametrize(("tool_name", "arguments"), ESCAPES, ids=[f"{t}:{a}" for t, a in ESCAPES])
def test_sandbox_escapes_are_refused_by_validation(sandbox, tool_name, arguments):
    (sandbox / "link-out").symlink_to(sandbox.parent, target_is_directory=True)
    (sandbox / "notes.txt").write_text("x")
    with pytest.raises(ArgumentsInvalid) as exc:
        AGENT.tool(tool_name).validate(arguments)
    text = str(exc.value.errors)
    assert "escapes the sandbox" in text or "not allowed" in text, text


def test_a_link_swapped_in_after_validation_is_refused_at_execution(sandbox):
    t = AGENT.tool("read_file")
    cleaned = t.validate({"path": "/later.txt"})
    (sandbox / "later.txt").symlink_to(sandbox.parent / "outside.txt")
    with pytest.raises(ToolError, match="escapes the sandbox"):
        t.run(ToolContext(None, None, None), cleaned)


def test_paths_are_virtual_with_the_sandbox_as_root(sandbox):
    assert normalise("notes.txt") == normalise("/notes.txt") == normalise("./a/../notes.txt") == "/notes.txt"
    assert real_path("/etc/hosts") == sandbox / "etc" / "hosts"  # the sandbox's etc, not the host's


def test_file_tools_act_for_real(sandbox):
    assert run("write_file", path="/docs/notes.txt", content="hello") == "Wrote 5 bytes to /docs/notes.txt."
    assert (sandbox / "docs" / "notes.txt").read_text() == "hello"
    with pytest.raises(ToolError, match="already exists"):
        run("write_file", path="/docs/notes.txt", content="again")
    run("write_file", path="/docs/notes.txt", content="bye", overwrite=True)
    assert run("read_file", path="docs/notes.txt") == "bye"
    assert "file notes.txt 3 bytes" in run("list_files", path="/docs")
    assert run("rename_file", source="/docs/notes.txt", destination="/old.txt") == \
        "Copied /docs/notes.txt to /old.txt, then deleted /docs/notes.txt."
    assert not (sandbox / "docs" / "notes.txt").exists() and (sandbox / "old.txt").read_text() == "bye"
    run("delete_file", path="/old.txt")
    assert not (sandbox / "old.txt").exists()
    run("delete_directory", path="/docs")
    assert not (sandbox / "docs").exists()
    with pytest.raises(ToolError, match="root itself"):
        run("delete_directory", path="/")


def test_descriptions_are_specific_and_honest(sandbox):
    (sandbox / "config.json").write_text("{}" * 10)
    rename = AGENT.tool("rename_file")
    assert rename.description_for({"source": "/config.json", "destination": "/config.json.bak"}) == (
        "Rename /config.json to /config.json.bak: copy /config.json to /config.json.bak, then delete "
        "/config.json (refused if /config.json.bak exists)")
    write = AGENT.tool("write_file")
    assert write.description_for({"path": "/config.json", "content": "{}", "overwrite": True}) == (
        "Overwrite /config.json (20 bytes now) with 2 bytes; its current content is lost")
    assert AGENT.tool("delete_file").impact_for({"path": "/config.json"}) == \
        "The file /config.json will be permanently deleted"
    email = AGENT.tool("send_email")
    args = {"to": "bob@example.com", "subject": "Hi", "body": "x"}
    assert email.description_for(args) == "Send an email to bob@example.com, subject: Hi"
    assert email.impact_for(args) == "The email goes to bob@example.com and cannot be recalled once sent"
    assert not email.reversible and not AGENT.tool("delete_file").reversible


def test_send_email_uses_django_mail(sandbox):
    run("send_email", to="bob@example.com", subject="Status", body="All good")
    assert len(mail.outbox) == 1
    sent = mail.outbox[0]
    assert (sent.to, sent.subject, sent.body, sent.extra_headers["X-Agui-Tool-Call"]) == (
        ["bob@example.com"], "Status", "All good", "call-test")
    with pytest.raises(ArgumentsInvalid):
        AGENT.tool("send_email").validate({"to": "not an address", "subject": "s", "body": "b"})


@pytest.mark.parametrize(("command", "message"), [
    ("rm -rf /", "'rm' is not allowed"),
    ("sh -c 'ls'", "'sh' is not allowed"),
    ("ls | cat", "no shell"),
    ("cat notes.txt > copy.txt", "no shell"),
    ("ls ; rm x", "no shell"),
    ("echo $(whoami)", "no shell"),
    ("cat 'unterminated", "cannot parse"),
    ("", "empty"),
])
def test_execute_command_allow_list_and_no_shell(sandbox, command, message):
    with pytest.raises(ArgumentsInvalid) as exc:
        execute_command.validate({"command": command})
    assert message in str(exc.value.errors)


def test_execute_command_runs_without_a_shell_inside_the_sandbox(sandbox):
    (sandbox / "notes.txt").write_text("one\ntwo\n")
    assert run("execute_command", command="ls") == "exit code 0\nnotes.txt"
    assert run("execute_command", command="wc -l /notes.txt") == "exit code 0\n2 /notes.txt"
    assert run("execute_command", command="echo '$HOME; rm -rf /'") == "exit code 0\n$HOME; rm -rf /"
    missing = run("execute_command", command="cat /etc/passwd")  # the sandbox's /etc/passwd: absent
    assert missing.startswith("exit code 1") and "root:" not in missing and str(sandbox) not in missing
    assert "rm" not in ALLOWED_COMMANDS and "sh" not in ALLOWED_COMMANDS


def test_execute_command_has_a_timeout(sandbox, settings):
    settings.AGUI_COMMAND_TIMEOUT = 0.5
    fifo = sandbox / "never"
    os.mkfifo(fifo)  # reading a FIFO nobody writes blocks forever
    with pytest.raises(ToolError, match="timed out after 0.5 s"):
        run("execute_command", command="cat never")


SPECS = [t.openai_spec() for t in AGENT.tools]


@pytest.mark.parametrize(("prompt", "tool_name", "arguments"), [
    ("List the files", "list_files", {"path": "/"}),
    ("Write 'hello' to notes.txt", "write_file", {"path": "notes.txt", "content": "hello", "overwrite": False}),
    ("Overwrite notes.txt with 'bye'", "write_file", {"path": "notes.txt", "content": "bye", "overwrite": True}),
    ("Read notes.txt", "read_file", {"path": "notes.txt"}),
    ("Rename notes.txt to old-notes.txt", "rename_file", {"source": "notes.txt", "destination": "old-notes.txt"}),
    ("Delete old-notes.txt", "delete_file", {"path": "old-notes.txt"}),
    ("Delete /etc/hosts", "delete_file", {"path": "/etc/hosts"}),
    ("Delete the directory logs", "delete_directory", {"path": "logs"}),
    ("Email bob@example.com subject 'Status' saying 'All good'", "send_email",
     {"to": "bob@example.com", "subject": "Status", "body": "All good"}),
    ("Run `ls -la`", "execute_command", {"command": "ls -la"}),
])
def test_the_offline_model_plays_the_ops_demo_prompts(prompt, tool_name, arguments):
    import json

    reply = llm.scripted_reply([{"role": "user", "content": prompt}], SPECS)
    [call] = reply["tool_calls"]
    assert call["name"] == tool_name and json.loads(call["arguments"]) == arguments
    assert "Try:" in llm.scripted_reply([{"role": "user", "content": "hello"}], SPECS)["text"]


# --- end to end on a live worker (offline scripted model, real Redis) ----------------------------------

def say(api, thread, text):
    resp = api.post(f"/api/threads/{thread}/messages/", {"content": text}, format="json")
    assert resp.status_code == 202, resp.content
    run_id = resp.json()["run_id"]
    event, _ = wait_for_event(thread, lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR")
                              and e.get("runId", run_id) == run_id)
    return event


def settled(thread, parent_run):
    state = {}

    def match(e):
        if e["type"] == "RUN_STARTED" and e.get("parentRunId") == parent_run:
            state["run"] = e["runId"]
        return "run" in state and e["type"] == "RUN_FINISHED" and e.get("runId") == state["run"]

    return wait_for_event(thread, match)[0]


def last_tool_result(thread):
    return Message.objects.filter(thread_id=thread, role="tool").order_by("-seq").first().content


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_every_mode_end_to_end(celery_worker_live, api, sandbox, settings):
    settings.OPENAI_API_KEY = ""  # the offline scripted model, self-check included
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "ops"}, format="json").json()["id"]

    # never + conditional without a match: runs at once
    assert say(alice, thread, "Write 'hello' to notes.txt")["type"] == "RUN_FINISHED"
    assert (sandbox / "notes.txt").read_text() == "hello"

    # conditional, overwrite == true: the requester confirms; "always allow in this thread"
    event = say(alice, thread, "Overwrite notes.txt with 'bye'")
    [interrupt] = event["outcome"]["interrupts"]
    req = ApprovalRequest.objects.get(pk=interrupt["id"])
    assert req.matched_rule == "default: rule 1 (overwrite): gate" and req.approver_kind == "requester"
    assert req.description == "Overwrite /notes.txt (5 bytes now) with 3 bytes; its current content is lost"
    resp = alice.post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "always_allow_in_thread": True},
                      format="json")
    assert resp.status_code == 200
    settled(thread, req.run_ref)
    assert (sandbox / "notes.txt").read_text() == "bye"
    event = say(alice, thread, "Overwrite notes.txt with 'again'")
    assert event["type"] == "RUN_FINISHED" and "outcome" not in event  # the grant: no second question here
    assert (sandbox / "notes.txt").read_text() == "again"
    call = ToolCall.objects.filter(thread_id=thread, name="write_file").order_by("-created_at").first()
    assert call.status == "succeeded" and not call.approval_id

    # conditional deny: /etc/* is blocked, the model is told
    say(alice, thread, "Delete /etc/hosts")
    assert ToolCall.objects.filter(thread_id=thread, name="delete_file").get().status == "denied"
    assert "blocked by policy" in last_tool_result(thread) and "system files" in last_tool_result(thread)

    # deny mode
    say(alice, thread, "Delete the directory logs")
    assert ToolCall.objects.get(thread_id=thread, name="delete_directory").status == "denied"

    # model mode: listing needs nobody, reading file contents asks the user (reason recorded)
    assert say(alice, thread, "Run `ls`")["type"] == "RUN_FINISHED"
    assert last_tool_result(thread) == "exit code 0\nnotes.txt"
    event = say(alice, thread, "Run `cat notes.txt`")
    req = ApprovalRequest.objects.get(pk=event["outcome"]["interrupts"][0]["id"])
    assert req.matched_rule == "default: mode model (the model asked for a person)"
    assert "prints file contents" in req.self_check
    alice.post(f"/api/approvals/{req.pk}/decide/", {"decision": "reject", "feedback": "not now"}, format="json")
    settled(thread, req.run_ref)
    assert "explicitly rejected" in last_tool_result(thread) and '"not now"' in last_tool_result(thread)

    # always, group-routed: a reviewer approves the email; the sandbox never leaks
    event = say(alice, thread, "Email bob@example.com subject 'Status' saying 'All good'")
    req = ApprovalRequest.objects.get(pk=event["outcome"]["interrupts"][0]["id"])
    assert (req.approver_group.name, req.risk, req.reversible) == ("reviewers", "high", False)
    assert api("rita").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"},
                            format="json").status_code == 200
    settled(thread, req.run_ref)
    assert [m.to for m in mail.outbox if m.subject == "Status"] == [["bob@example.com"]]

    # an escape in the model's arguments is refused before policy: no request, nothing touched
    before = ApprovalRequest.objects.count()
    say(alice, thread, "Delete ../outside.txt")
    assert ToolCall.objects.filter(thread_id=thread, status="invalid").count() == 1
    assert "escapes the sandbox" in last_tool_result(thread)
    assert ApprovalRequest.objects.count() == before and (sandbox.parent / "outside.txt").exists()
