"""The ops agent (seed 003): sandboxed tools acting for real, escapes refused before policy is asked,
the offline model's demo prompts, and every approval mode end to end on a live worker."""

import os
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core import mail

from agents import llm
from agents.catalog import get_agent, ops
from agents.catalog.ops import ALLOWED_COMMANDS, execute_command, normalise, real_path
from agents.models import Message, ToolCall
from agents.runtime.tools import ToolContext, ToolError
from approvals import policy
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


def _bwrap_unusable():
    """Why commands cannot be isolated with bubblewrap here, or "" when they can."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return "bwrap (Debian's bubblewrap) is not installed"
    usable, reason = ops._bwrap_probe(bwrap)
    return "" if usable else reason


@pytest.fixture(params=["off", "auto"])
def isolation(request, settings):
    """Commands run both ways: validated argv directly (off) and under bubblewrap where it works (auto)."""
    settings.AGUI_SANDBOX_BWRAP = request.param
    return request.param


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
    # finding 13.1: after "--" a "flag" is a path, and it is checked like any other
    ("execute_command", {"command": "ls -la -- -d/../.."}),
    ("execute_command", {"command": "cat -- -d/../../../../../../../../etc/hostname"}),
    ("execute_command", {"command": "grep -a -o -E [0-9a-f]{40} -- -e/../../db.sqlite3"}),
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


@pytest.mark.parametrize("subject", ["Status\nBcc: eve@example.com", "Status\r\n", "\nStatus"])
def test_a_subject_on_more_than_one_line_is_refused_before_anyone_is_asked(sandbox, subject):
    """Django refuses a header with a line break only as the mail goes: the call passed
    validation, waited for a reviewer, and after the approval failed 'unexpectedly'. The model
    (and a reviewer's edit, which the same validation checks) now reads why at once."""
    with pytest.raises(ArgumentsInvalid) as caught:
        AGENT.tool("send_email").validate({"to": "bob@example.com", "subject": subject, "body": "b"})
    assert caught.value.errors == {"subject": ["must be one line (no line breaks)"]}
    assert AGENT.tool("send_email").validate({"to": "bob@example.com", "subject": "Status \u2028 ok", "body": "b"})


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


def test_execute_command_runs_without_a_shell_inside_the_sandbox(sandbox, isolation):
    (sandbox / "notes.txt").write_text("one\ntwo\n")
    assert run("execute_command", command="ls") == "exit code 0\nnotes.txt"
    assert run("execute_command", command="wc -l /notes.txt") == "exit code 0\n2 /notes.txt"
    assert run("execute_command", command="echo '$HOME; rm -rf /'") == "exit code 0\n$HOME; rm -rf /"
    missing = run("execute_command", command="cat /etc/passwd")  # the sandbox's /etc/passwd: absent
    assert missing.startswith("exit code 1") and "root:" not in missing and str(sandbox) not in missing
    assert "rm" not in ALLOWED_COMMANDS and "sh" not in ALLOWED_COMMANDS


def test_execute_command_has_a_timeout(sandbox, settings, isolation):
    settings.AGUI_COMMAND_TIMEOUT = 0.5
    fifo = sandbox / "never"
    os.mkfifo(fifo)  # reading a FIFO nobody writes blocks forever
    with pytest.raises(ToolError, match="timed out after 0.5 s"):
        run("execute_command", command="cat never")


# --- finding 13.1: every argument is an option of that program or a path inside the sandbox ------------

FINDING_ESCAPES = [
    ("ls -la -- -d/../..", "'-d/../..' escapes the sandbox"),
    ("cat -- -d/../../../../../../../../etc/hostname", "'-d/../../../../../../../../etc/hostname' escapes the sandbox"),
    ("grep -a -o -E [0-9a-f]{40} -- -e/../../db.sqlite3", "'-e/../../db.sqlite3' escapes the sandbox"),
]


@pytest.fixture
def sandbox_next_to_a_database(settings, tmp_path):
    """The layout of e0e825f's default: var/sandbox beside var/db.sqlite3 holding a 40-hex token."""
    var = tmp_path / "var"
    (var / "sandbox").mkdir(parents=True)
    (var / "db.sqlite3").write_text("token 0123456789abcdef0123456789abcdef01234567\n")
    settings.AGUI_SANDBOX_DIR = var / "sandbox"
    for name in ("-d", "-e"):  # made by the attacker with the tool itself, so that "-d/.." resolves
        run("write_file", path=f"{name}/x", content="")
    return var / "sandbox"


@pytest.mark.parametrize(("command", "message"), FINDING_ESCAPES, ids=[c for c, _ in FINDING_ESCAPES])
def test_a_dash_argument_after_double_dash_is_a_path_and_cannot_leave_the_sandbox(
        sandbox_next_to_a_database, isolation, command, message):
    with pytest.raises(ArgumentsInvalid) as exc:  # what the model gets: an argument-validation error
        execute_command.validate({"command": command})
    [error] = exc.value.errors["command"]
    assert message in error and "every argument that is not one of its options is a path" in error, error
    # the tool itself refuses it too, called without validation: nothing runs
    with pytest.raises(ToolError, match="escapes the sandbox"):
        execute_command.run(ToolContext(None, None, None), {"command": command})


@pytest.mark.parametrize(("command", "message"), [
    ("ls -L", "ls: option -L (in '-L') is not allowed here; ls takes -a -l -h"),  # follows links
    ("ls -lZ", "ls: option -Z (in '-lZ') is not allowed"),
    ("ls --color=always", "ls: option --color is not allowed"),
    ("grep -f patterns.txt notes.txt", "grep: option -f"),  # reads a file that is not an operand
    ("grep -R x", "grep: option -R"),  # -R follows every link, -r does not
    ("grep", "grep: give a pattern"),
    ("tail -f notes.txt", "tail: option -f"),
    ("head -n", "head: -n needs a value (-n N)"),
    ("head -n ten notes.txt", "head: -n 'ten' is not a valid N"),
    ("head --lines", "head: --lines needs a value"),
    ("wc --files0-from=list", "wc: option --files0-from is not allowed"),
    ("du --exclude-from=list", "du: option --exclude-from is not allowed"),
    ("wc --lines=3", "wc: --lines takes no value"),
    ("cat -- ../outside.txt", "'../outside.txt' escapes the sandbox"),
])
def test_each_program_takes_only_its_own_options(sandbox, command, message):
    with pytest.raises(ArgumentsInvalid) as exc:
        execute_command.validate({"command": command})
    assert message in str(exc.value.errors), exc.value.errors


@pytest.mark.parametrize(("command", "canonical"), [
    ("ls -la", "ls -l -a"),
    ("ls -la -- -notes.txt", "ls -l -a /-notes.txt"),
    ("head -n5 notes.txt", "head -n 5 /notes.txt"),
    ("tail --lines=+2 docs/../notes.txt", "tail -n +2 /notes.txt"),
    ("grep -in one notes.txt", "grep -i -n one /notes.txt"),
    ("grep -- -x notes.txt", "grep -e -x /notes.txt"),  # the pattern is not a path, and never an option
    ("grep -e -d/../.. notes.txt", "grep -e -d/../.. /notes.txt"),
    ("grep -a -o -E '[0-9a-f]{40}' -- notes.txt", "grep -a -o -E '[0-9a-f]{40}' /notes.txt"),
    ("du -sh", "du -s -h"),
    ("stat -c %s notes.txt", "stat -c %s /notes.txt"),
    ("echo -d/../.. is text", "echo -d/../.. is text"),  # echo opens nothing
])
def test_validated_commands_are_canonical(sandbox, command, canonical):
    assert execute_command.validate({"command": command}) == {"command": canonical}


def test_paths_reach_the_program_as_absolute_sandbox_paths_after_double_dash(sandbox):
    (sandbox / "notes.txt").write_text("x")
    argv = ops._argv_for("grep -i x notes.txt")
    assert argv[1:] == ["-i", "-e", "x", "--", str(sandbox / "notes.txt")] and argv[0].endswith("/grep")
    assert ops._argv_for("cat /", inside="/sandbox")[1:] == ["--", "/sandbox"]
    assert ops._argv_for("cat a/../notes.txt", inside="/sandbox")[1:] == ["--", "/sandbox/notes.txt"]
    assert ops._argv_for("ls")[1:] == []


def test_double_dash_ends_options_for_real(sandbox, isolation):
    (sandbox / "-notes.txt").write_text("dash\n")
    (sandbox / "notes.txt").write_text("one\n-x\n")
    assert run("execute_command", command="cat -- -notes.txt") == "exit code 0\ndash"
    assert run("execute_command", command="grep -- -x notes.txt") == "exit code 0\n-x"
    assert run("execute_command", command="head -n 1 notes.txt") == "exit code 0\none"
    assert run("execute_command", command="ls -- -notes.txt") == "exit code 0\n/-notes.txt"


def test_commands_run_isolated_by_bubblewrap_where_it_works(sandbox, settings):
    reason = _bwrap_unusable()
    if reason:
        pytest.skip(f"bubblewrap cannot isolate commands here: {reason}")
    settings.AGUI_SANDBOX_BWRAP = "required"
    bwrap = ops.isolation()
    assert bwrap

    def inside(*argv):
        done = subprocess.run(ops._bwrap_argv(bwrap, sandbox) + list(argv), capture_output=True, timeout=10)
        return done.returncode, (done.stdout + done.stderr).decode()

    code, listing = inside("/usr/bin/ls", "/")
    assert code == 0 and "sandbox" in listing.split()
    assert not {"etc", "home", "root", "tmp", "var", "work"} & set(listing.split()), listing
    code, out = inside("/usr/bin/cat", str(sandbox.parent / "outside.txt"))  # the host's files are not there
    assert code != 0 and "secret" not in out
    code, out = inside("/usr/bin/touch", "/sandbox/new.txt")  # read-only, even for an allowed program
    assert code != 0 and not (sandbox / "new.txt").exists()
    (sandbox / "notes.txt").write_text("one\n")
    assert run("execute_command", command="cat notes.txt") == "exit code 0\none"
    assert run("execute_command", command="ls -d /") == "exit code 0\n/"


def test_isolation_can_be_forced_off_or_required(sandbox, settings, monkeypatch, tmp_path):
    (sandbox / "notes.txt").write_text("one\n")
    settings.AGUI_SANDBOX_BWRAP = "off"
    assert ops.isolation() is None and run("execute_command", command="cat notes.txt") == "exit code 0\none"
    which = shutil.which
    monkeypatch.setattr(ops.shutil, "which", lambda name, **kw: None if name == "bwrap" else which(name, **kw))
    settings.AGUI_SANDBOX_BWRAP = "auto"  # not installed: the validated argv runs directly
    assert ops.isolation() is None and run("execute_command", command="cat notes.txt") == "exit code 0\none"
    settings.AGUI_SANDBOX_BWRAP = "required"
    with pytest.raises(ToolError, match=r"AGUI_SANDBOX_BWRAP=required.*not installed; nothing was run"):
        run("execute_command", command="cat notes.txt")
    # installed but unable to make namespaces (an unprivileged container): found by one probe, then the
    # validated argv runs directly (auto) or nothing runs (required), saying why
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(ops.shutil, "which", lambda name, **kw: str(fake) if name == "bwrap" else which(name, **kw))
    with pytest.raises(ToolError, match="bwrap failed: bwrap: No permissions to creating new namespace"):
        run("execute_command", command="cat notes.txt")
    settings.AGUI_SANDBOX_BWRAP = "auto"
    assert ops.isolation() is None and run("execute_command", command="cat notes.txt") == "exit code 0\none"
    settings.AGUI_SANDBOX_BWRAP = "sometimes"
    with pytest.raises(ToolError, match="not one of auto, off, required"):
        run("execute_command", command="cat notes.txt")


def test_the_default_sandbox_is_not_next_to_the_database(monkeypatch, tmp_path):
    """e0e825f: var/sandbox, so var/db.sqlite3 was one '..' away. Now the user's data directory, in
    a parent of its own: neither it nor its parent is the product's var/ or project directory."""
    from django.conf import settings

    monkeypatch.delenv("AGUI_SANDBOX_DIR", raising=False)
    settings_file = Path(settings.BASE_DIR) / "agui_project" / "settings.py"
    for xdg, expected in [(str(tmp_path / "data"), tmp_path / "data" / "agui-inbox" / "sandbox"),
                          (None, tmp_path / "home" / ".local" / "share" / "agui-inbox" / "sandbox")]:
        if xdg:
            monkeypatch.setenv("XDG_DATA_HOME", xdg)
        else:
            monkeypatch.delenv("XDG_DATA_HOME", raising=False)
            monkeypatch.setenv("HOME", str(tmp_path / "home"))
        conf = runpy.run_path(str(settings_file))
        default = Path(conf["AGUI_SANDBOX_DIR"])
        var, base = Path(conf["VAR_DIR"]).resolve(), Path(conf["BASE_DIR"]).resolve()
        assert default == expected
        assert not default.is_relative_to(var) and not default.is_relative_to(base)
        assert var not in (default.parent, default.parent.parent) and base not in default.parents


def test_the_system_files_rule_covers_every_path_argument_of_every_changing_tool(demo, sandbox):
    """e0e825f: 'Rename /etc/hosts to gone.txt' only asked the requester; the deny rule looked at
    delete_file's path alone."""
    ctx = {"user": demo["alice"], "agent": "ops", "thread": "t-1"}

    def verdict(tool_name, **arguments):
        return policy.evaluate(tool_name, AGENT.tool(tool_name).validate(arguments), ctx)

    for tool_name, arguments in [
        ("rename_file", {"source": "/etc/hosts", "destination": "gone.txt"}),
        ("rename_file", {"source": "notes.txt", "destination": "/etc/cron.d/job"}),
        ("rename_file", {"source": "notes.txt", "destination": "docs/../etc"}),
        ("write_file", {"path": "/etc/hosts", "content": "x"}),  # creating one, not only overwriting
        ("write_file", {"path": "etc/hosts", "content": "x", "overwrite": True}),
        ("delete_file", {"path": "/etc/hosts"}),
    ]:
        denied = verdict(tool_name, **arguments)
        assert denied.action == "deny" and denied.matched_rule == "default: rule 1 (system files): deny", \
            (tool_name, arguments)
    renamed = verdict("rename_file", source="notes.txt", destination="old-notes.txt")
    assert renamed.action == "approve" and renamed.approver_kind == "requester"
    assert renamed.matched_rule == "default: rule 2 (every other rename): gate"
    assert verdict("rename_file", source="/etcetera", destination="/etc.bak").action == "approve"
    assert verdict("write_file", path="/notes.txt", content="x").action == "auto"
    assert verdict("delete_directory", path="/etc").action == "deny"
    for name in ("write_file", "rename_file", "delete_file"):  # one rule, shown in every default policy
        [rule] = [r for r in AGENT.tool(name).policy["conditions"] if r["name"] == "system files"]
        assert rule == ops.system_files(*[a for a in ("path", "source", "destination")
                                          if a in AGENT.tool(name).schema["properties"]])


def test_a_link_inside_the_sandbox_does_not_sidestep_the_rule(demo, sandbox):
    """Validated paths are canonical: rules see the file that is really touched."""
    (sandbox / "etc").mkdir()
    (sandbox / "etc" / "hosts").write_text("127.0.0.1 localhost\n")
    (sandbox / "shortcut").symlink_to("etc", target_is_directory=True)
    cleaned = AGENT.tool("rename_file").validate({"source": "shortcut/hosts", "destination": "gone.txt"})
    assert cleaned == {"source": "/etc/hosts", "destination": "/gone.txt"}
    assert policy.evaluate("rename_file", cleaned, {"user": demo["alice"]}).action == "deny"
    # a link swapped in after validation (and policy) is refused as the tool acts
    t = AGENT.tool("delete_file")
    cleaned = t.validate({"path": "/later/hosts"})
    (sandbox / "later").symlink_to("etc", target_is_directory=True)
    with pytest.raises(ToolError, match="now leads to /etc/hosts"):
        t.run(ToolContext(None, None, None), cleaned)
    assert (sandbox / "etc" / "hosts").exists()


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
def test_every_mode_end_to_end(celery_worker_live, api, demo, settings, sandbox):
    settings.OPENAI_API_KEY = ""  # the offline scripted model, self-check included
    base, sandbox = sandbox, sandbox / "users" / str(demo["alice"].pk)  # alice's own "/"
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "ops"}, format="json").json()["id"]

    # never + conditional without a match: runs at once
    assert say(alice, thread, "Write 'hello' to notes.txt")["type"] == "RUN_FINISHED"
    assert (sandbox / "notes.txt").read_text() == "hello"

    # conditional, overwrite == true: the requester confirms; "always allow in this thread"
    event = say(alice, thread, "Overwrite notes.txt with 'bye'")
    [interrupt] = event["outcome"]["interrupts"]
    req = ApprovalRequest.objects.get(pk=interrupt["id"])
    assert req.matched_rule == "default: rule 2 (overwrite): gate" and req.approver_kind == "requester"
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

    # the same rule holds for a rename's source (finding 13.1: only the requester was asked)
    (sandbox / "etc").mkdir()
    (sandbox / "etc" / "hosts").write_text("127.0.0.1 localhost\n")
    say(alice, thread, "Rename /etc/hosts to gone.txt")
    assert ToolCall.objects.filter(thread_id=thread, name="rename_file").get().status == "denied"
    assert "system files" in last_tool_result(thread)
    assert (sandbox / "etc" / "hosts").exists() and not (sandbox / "gone.txt").exists()

    # always, group-routed: a reviewer approves the email; the sandbox never leaks
    event = say(alice, thread, "Email bob@example.com subject 'Status' saying 'All good'")
    assert "outcome" not in event  # a group decides: no interrupt for alice (CUSTOM approval_status)
    req = ApprovalRequest.objects.get(run_ref=event["runId"])
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
    assert ApprovalRequest.objects.count() == before and (base.parent / "outside.txt").exists()

    # finding 13.1: a "flag" after -- is a path; it is refused the same way, nothing runs, nobody is asked
    say(alice, thread, "Run `ls -la -- -d/../..`")
    assert ToolCall.objects.filter(thread_id=thread, status="invalid").count() == 2
    assert "'-d/../..' escapes the sandbox" in last_tool_result(thread)
    assert ApprovalRequest.objects.count() == before


def test_each_user_has_a_sandbox_of_their_own(demo, sandbox):
    """Files belong to someone: alice's "/" is not bob's, so bob can neither read, list, run a
    command on, nor overwrite what alice wrote (and the names he uses never reach her folder)."""
    from agents.runtime.tools import on_behalf_of

    def as_user(name, tool_name, **arguments):
        t = AGENT.tool(tool_name)
        user = demo[name]
        with on_behalf_of(user):
            return t.run(ToolContext(user=user, thread=None, run=None, tool_call_id="c"),
                         t.validate(arguments, requester=user))

    assert as_user("alice", "write_file", path="/mine.txt", content="alice's notes") == "Wrote 13 bytes to /mine.txt."
    assert (sandbox / "users" / str(demo["alice"].pk) / "mine.txt").read_text() == "alice's notes"
    assert "mine.txt" not in as_user("bob", "list_files", path="/")
    with pytest.raises(ToolError, match="does not exist"):
        as_user("bob", "read_file", path="/mine.txt")
    assert "alice's notes" not in as_user("bob", "execute_command", command="cat mine.txt")
    as_user("bob", "write_file", path="/mine.txt", content="bob's")
    assert (sandbox / "users" / str(demo["alice"].pk) / "mine.txt").read_text() == "alice's notes"
    with pytest.raises(ArgumentsInvalid):  # and ".." cannot climb from his folder into hers
        AGENT.tool("read_file").validate({"path": f"/../{demo['alice'].pk}/mine.txt"}, requester=demo["bob"])


def test_byte_counts_are_written_as_each_language_writes_numbers(sandbox):
    """"Supprimer le fichier : /big.log (12345 octets)": the counts were Python's digits on every
    language's page, beside amounts and balances written the reader's way."""
    from agents.runtime.tools import said_in_every_language

    (sandbox / "big.log").write_text("x" * 12345)
    deleted = said_in_every_language(AGENT.tool("delete_file"), {"path": "/big.log"})
    assert "12,345" in deleted["en"]["description"] and "12\xa0345" in deleted["fr"]["description"]
    assert "12.345" in deleted["pt-br"]["description"]
    written = said_in_every_language(AGENT.tool("write_file"), {"path": "/big.log", "content": "y" * 2000,
                                                                 "overwrite": True})
    assert "12\xa0345" in written["fr"]["description"] and "2\xa0000" in written["fr"]["description"]


def test_what_the_file_system_refuses_is_said_to_the_model(sandbox):
    """A folder path through a file, or a name longer than the file system takes, raised an OSError
    the runner reports as 'write_file failed unexpectedly': after an approval, nobody learnt why."""
    run("write_file", path="/a.txt", content="hello")
    with pytest.raises(ToolError, match=r"^could not write /a.txt/b: File exists$"):
        run("write_file", path="/a.txt/b", content="x")
    with pytest.raises(ToolError, match=r"^could not copy /a.txt to /a.txt/c: File exists$"):
        run("rename_file", source="/a.txt", destination="/a.txt/c")
    assert (sandbox / "a.txt").read_text() == "hello"  # the source stays when the copy fails
    with pytest.raises(ArgumentsInvalid) as caught:
        AGENT.tool("write_file").validate({"path": "/notes/" + "é" * 128, "content": "x"})
    assert "a name in a path is at most 255 bytes" in caught.value.errors["path"][0]
    assert run("write_file", path="/" + "x" * 255, content="x") == "Wrote 1 bytes to /" + "x" * 255 + "."
