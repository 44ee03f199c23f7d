"""The ops agent (seed 003): file, mail and command tools acting for real inside a sandbox.

Paths are virtual: "/" is the sandbox root (AGUI_SANDBOX_DIR), so "/etc/hosts" means the
sandbox's etc/hosts. A path that would leave the sandbox (".." above the root, a symbolic link
pointing out) is refused by argument validation, before policy is asked, and checked again
just before the tool acts. Default policies show every approval mode:

| tool | mode | who decides |
|---|---|---|
| list_files, read_file | never | - |
| write_file | conditional: overwrite == true -> gate | the requester |
| rename_file | always (it copies, then deletes: said so) | the requester |
| delete_file | conditional: /etc/* -> deny, otherwise gate | reviewers, escalated to oncall |
| send_email | always | reviewers |
| execute_command | model: the model's self-check decides | the requester |
| delete_directory | deny | - |
"""

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from pydantic import AfterValidator, Field

from agents.tools import ToolError, tool

from .agent import Agent

MAX_FILE_BYTES = 100_000
MAX_OUTPUT = 8_000
ALLOWED_COMMANDS = ("ls", "cat", "head", "tail", "wc", "du", "stat", "echo", "grep")
SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ";;", ">", ">>", "<", "<<", "2>", "2>&1", "&>"}


class SandboxEscape(ValueError):
    pass


def sandbox_root() -> Path:
    root = Path(settings.AGUI_SANDBOX_DIR).resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def normalise(path: str) -> str:
    """A virtual absolute path ("/a/b"), or SandboxEscape. Relative paths start at the root."""
    if not isinstance(path, str) or not path.strip():
        raise SandboxEscape("a path is required")
    if "\x00" in path or "\\" in path:
        raise SandboxEscape(f"{path!r}: NUL bytes and backslashes are not allowed in paths")
    if len(path) > 500:
        raise SandboxEscape("paths are at most 500 characters")
    parts = []
    for seg in path.strip().split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if not parts:
                raise SandboxEscape(f"{path!r} escapes the sandbox ('..' above its root)")
            parts.pop()
        else:
            parts.append(seg)
    return "/" + "/".join(parts)


def real_path(virtual: str) -> Path:
    """The file on disk for a virtual path; refuses a symbolic link (or .. ) that leads outside."""
    root = sandbox_root()
    target = (root / normalise(virtual).lstrip("/")).resolve()
    if target != root and root not in target.parents:
        raise SandboxEscape(f"{virtual!r} escapes the sandbox through a symbolic link")
    return target


def _checked(path: str) -> str:
    virtual = normalise(path)
    real_path(virtual)
    return virtual


SandboxPath = Annotated[str, AfterValidator(_checked),
                        Field(description='A path inside the sandbox; "/" is its root', max_length=500)]


def _checked_email(value: str) -> str:
    try:
        validate_email(value)
    except ValidationError as exc:
        raise ValueError(f"{value!r} is not an email address") from exc
    return value


def _checked_command(command: str) -> str:
    """Allow-listed program, no shell syntax, and every path-like argument inside the sandbox."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"cannot parse the command: {exc}") from exc
    if not argv:
        raise ValueError("the command is empty")
    if argv[0] not in ALLOWED_COMMANDS:
        raise ValueError(f"{argv[0]!r} is not allowed; allowed commands: {', '.join(ALLOWED_COMMANDS)}")
    for arg in argv[1:]:
        if arg in SHELL_OPERATORS or arg.startswith(("$(", "`")) or "\x00" in arg:
            raise ValueError(f"no shell here: {arg!r} (pipes, redirection and substitution are not available)")
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else (None if arg.startswith("-") else arg)
        if value:
            _checked(value)  # raises SandboxEscape for ../ and outbound links
    return command.strip()


def _argv_for(command: str):
    """The argv actually run: virtual absolute paths mapped into the sandbox."""
    argv = shlex.split(command)
    out = [shutil.which(argv[0], path="/usr/bin:/bin") or argv[0]]
    for arg in argv[1:]:
        if arg.startswith("/"):
            out.append(str(real_path(arg)))
        elif arg.startswith("-") and "=" in arg and arg.split("=", 1)[1].startswith("/"):
            flag, value = arg.split("=", 1)
            out.append(f"{flag}={real_path(value)}")
        else:
            out.append(arg)
    return out


def _size(path):
    try:
        target = real_path(path)
        return target.stat().st_size if target.is_file() else None
    except (OSError, SandboxEscape):
        return None


def _at(path):
    try:
        return real_path(path)
    except SandboxEscape as exc:  # a link swapped in after validation
        raise ToolError(str(exc)) from exc


# --- read-only tools ----------------------------------------------------------------------------


@tool(approval_mode="never", risk="low", reversible=True, idempotent=True,
      describe=lambda a: f"List the files in {a['path']}")
def list_files(ctx, path: SandboxPath = "/"):
    """List the files and directories at a path in the sandbox."""
    target = _at(path)
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory")
    rows = []
    for entry in sorted(target.iterdir(), key=lambda p: p.name)[:200]:
        kind = "dir " if entry.is_dir() else "file"
        size = "" if entry.is_dir() else f" {entry.stat().st_size} bytes"
        rows.append(f"{kind} {entry.name}{size}")
    return f"{path}: " + ("\n" + "\n".join(rows) if rows else "empty")


@tool(approval_mode="never", risk="low", reversible=True, idempotent=True,
      describe=lambda a: f"Read {a['path']}")
def read_file(ctx, path: SandboxPath):
    """Read a text file in the sandbox (at most 20,000 characters)."""
    target = _at(path)
    if not target.is_file():
        raise ToolError(f"{path} does not exist or is not a file")
    return target.read_text(errors="replace")[:20_000]


# --- writing ---------------------------------------------------------------------------------


def _describe_write(a):
    size = _size(a["path"])
    new = len(a["content"].encode())
    if a["overwrite"] and size is not None:
        return f"Overwrite {a['path']} ({size} bytes now) with {new} bytes; its current content is lost"
    if a["overwrite"]:
        return f"Write {new} bytes to {a['path']} (overwrite allowed; the file does not exist yet)"
    return f"Create {a['path']} with {new} bytes (refused if it already exists)"


@tool(
    approval_mode="conditional",
    conditions=[{"name": "overwrite", "when": {"path": "args.overwrite", "op": "eq", "value": True},
                 "action": "gate"}],
    approver="requester", risk="medium", reversible=False,
    describe=_describe_write,
    impact=lambda a: (f"The current content of {a['path']} is replaced and cannot be restored from here"
                      if a["overwrite"] else f"A new file {a['path']} appears in the sandbox"),
)
def write_file(ctx, path: SandboxPath,
               content: Annotated[str, Field(max_length=MAX_FILE_BYTES)],
               overwrite: bool = False):
    """Write a text file in the sandbox. Set overwrite to replace an existing file."""
    target = _at(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory")
    if target.exists() and not overwrite:
        raise ToolError(f"{path} already exists; ask to overwrite it explicitly")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)
    return f"Wrote {len(content.encode())} bytes to {path}."


@tool(
    approval_mode="always", approver="requester", risk="medium", reversible=True,
    describe=lambda a: (f"Rename {a['source']} to {a['destination']}: copy {a['source']} to {a['destination']}, "
                        f"then delete {a['source']} (refused if {a['destination']} exists)"),
    impact=lambda a: f"{a['source']} no longer exists afterwards; its content lives on as {a['destination']}",
)
def rename_file(ctx, source: SandboxPath, destination: SandboxPath):
    """Rename (move) a file inside the sandbox. It copies the file, then deletes the original."""
    src, dst = _at(source), _at(destination)
    if not src.is_file():
        raise ToolError(f"{source} does not exist or is not a file")
    if dst.exists():
        raise ToolError(f"{destination} already exists")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    src.unlink()
    return f"Copied {source} to {destination}, then deleted {source}."


@tool(
    approval_mode="conditional",
    conditions=[
        {"name": "system files", "when": {"path": "args.path", "op": "glob", "value": "/etc/*"}, "action": "deny"},
        {"name": "every other file", "action": "gate"},
    ],
    approver="group:reviewers", risk="high", reversible=False, timeout_seconds=900,
    escalation="group:oncall", escalation_fraction=0.75,
    describe=lambda a: f"Delete file: {a['path']}" + (f" ({_size(a['path'])} bytes)" if _size(a["path"]) else ""),
    impact=lambda a: f"The file {a['path']} will be permanently deleted",
)
def delete_file(ctx, path: SandboxPath):
    """Delete a file in the sandbox."""
    target = _at(path)
    if not target.is_file():
        raise ToolError(f"{path} does not exist or is not a file")
    target.unlink()
    return f"Deleted {path}."


@tool(approval_mode="deny", risk="critical", reversible=False,
      describe=lambda a: f"Delete the directory {a['path']} and everything in it",
      impact=lambda a: f"Every file under {a['path']} will be permanently deleted")
def delete_directory(ctx, path: SandboxPath):
    """Delete a directory in the sandbox with everything in it."""
    target = _at(path)
    if target == sandbox_root():
        raise ToolError("the sandbox root itself cannot be deleted")
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory")
    shutil.rmtree(target)
    return f"Deleted the directory {path}."


# --- mail and commands -------------------------------------------------------------------------


@tool(
    approval_mode="always", approver="group:reviewers", risk="high", reversible=False,
    describe=lambda a: f"Send an email to {a['to']}, subject: {a['subject']}",
    impact=lambda a: f"The email goes to {a['to']} and cannot be recalled once sent",
)
def send_email(ctx,
               to: Annotated[str, AfterValidator(_checked_email), Field(max_length=254)],
               subject: Annotated[str, Field(min_length=1, max_length=200)],
               body: Annotated[str, Field(max_length=20_000)]):
    """Send an email (through the site's mail server)."""
    EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [to],
                 headers={"X-Agui-Tool-Call": ctx.tool_call_id}).send(fail_silently=False)
    return f"Sent the email to {to} (subject: {subject})."


@tool(
    approval_mode="model", approver="requester", risk="medium", reversible=True,
    describe=lambda a: f"Run the command: {a['command']} (read-only, inside the sandbox)",
    impact="Read-only: it lists or prints files in the sandbox; nothing is changed",
)
def execute_command(ctx, command: Annotated[str, AfterValidator(_checked_command),
                                            Field(max_length=500, description=f"One of: {', '.join(ALLOWED_COMMANDS)}")]):
    """Run an allow-listed read-only command in the sandbox (no shell: no pipes or redirection)."""
    root = sandbox_root()
    try:
        argv = _argv_for(command)
    except SandboxEscape as exc:
        raise ToolError(str(exc)) from exc
    try:
        done = subprocess.run(
            argv, cwd=root, capture_output=True, stdin=subprocess.DEVNULL, timeout=settings.AGUI_COMMAND_TIMEOUT,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(root)}, shell=False, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"the command timed out after {settings.AGUI_COMMAND_TIMEOUT:g} s and was stopped") from exc
    except OSError as exc:
        raise ToolError(f"the command could not start: {exc.strerror}") from exc
    output = (done.stdout + done.stderr).decode(errors="replace").replace(str(root), "")
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT] + f"\n[... {len(output) - MAX_OUTPUT} more characters]"
    return f"exit code {done.returncode}\n{output}".rstrip()


AGENT = Agent(
    name="ops",
    title="Ops assistant",
    description="Works on files in a sandbox, sends email and runs read-only commands; risky steps wait for "
    "you or a reviewer.",
    system_prompt=(
        "You are a careful operations assistant. You act only through your tools, on files inside a sandbox "
        'whose root is "/". Describe each step honestly before taking it. Never claim an action happened '
        "unless a tool result says so. If a person rejects an action, or a tool is blocked by policy, do not "
        "try to reach the same goal another way unless the user tells you to."
    ),
    tools=[list_files, read_file, write_file, rename_file, delete_file, delete_directory, send_email,
           execute_command],
)
