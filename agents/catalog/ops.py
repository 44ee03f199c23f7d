"""The ops agent: file, mail and command tools acting for real inside a sandbox.

Paths are virtual: "/" is the root of the requester's own sandbox (a folder per user under
AGUI_SANDBOX_DIR: files belong to someone, and nobody can name another user's), so "/etc/hosts"
means that sandbox's etc/hosts. A path that would leave the sandbox (".." above the root, a symbolic link
pointing out) is refused by argument validation, before policy is asked, and checked again
just before the tool acts. A validated path is canonical (links inside the sandbox followed), so
rules see the file that is really touched; one that leads elsewhere by the time the tool acts is
refused. Default policies show every approval mode:

| tool | mode | who decides |
|---|---|---|
| list_files, read_file | never (reading changes nothing) | - |
| write_file | conditional: system files -> deny; overwrite == true -> gate | the requester |
| rename_file | conditional: system files (source or destination) -> deny; otherwise gate (it copies, then deletes: said so) | the requester |
| delete_file | conditional: system files -> deny, otherwise gate | reviewers, escalated to oncall |
| send_email | always | reviewers |
| execute_command | model: the model's self-check decides | the requester |
| delete_directory | deny (whatever the path) | - |

"System files" is one rule (`system_files(...)`), first in the conditions of every tool that
changes files: denied when any of its path arguments (a rename's source and destination alike) is
/etc or lies under it. Reads and listings change nothing and stay free; delete_directory is denied
outright (rules do not apply in mode deny).

execute_command runs one allow-listed program without a shell. Every argument is an option from
that program's own allow-list (PROGRAMS), the value of such an option, grep's pattern, or a path
that normalises inside the sandbox; "--" ends the options and what follows is a path like any
other; anything else is refused by validation. Paths reach the program as absolute paths (after
"--"), never as the raw text. Where bubblewrap works (`bwrap`, Debian's `bubblewrap`), the program
runs in namespaces of its own that see only the sandbox (read-only, at /sandbox) and the system's
programs and libraries (read-only): no network, no other files, no capabilities.
AGUI_SANDBOX_BWRAP = auto (the default: used when installed and a probe run succeeds, otherwise the
validated argv runs directly, logged once) | off | required (a command it cannot isolate is refused).
"""

import contextlib
import functools
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from django.utils.encoding import punycode
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from pydantic import AfterValidator, Field

from agents.runtime.tools import ToolError, acting_for, tool

from .agent import Agent

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 100_000
MAX_OUTPUT = 8_000
NAME_MAX = 255  # bytes of one file name (Linux, and most file systems)
SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ";;", ">", ">>", "<", "<<", "2>", "2>&1", "&>"}


class SandboxEscape(ValueError):
    pass


def sandbox_root() -> Path:
    """The sandbox of the user the call acts for: files belong to someone, so each user's "/" is
    a folder of their own (by id: a username may be ".."), and nobody can name another's files.
    Outside any call (management, tests) it is the base folder itself."""
    root = Path(settings.AGUI_SANDBOX_DIR).resolve()
    user = acting_for()
    if user is not None and getattr(user, "pk", None):
        root = root / "users" / str(int(user.pk))
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
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
        elif len(seg.encode("utf-8", "surrogatepass")) > NAME_MAX:  # the file system's limit: refused before anyone is asked
            raise SandboxEscape(f"{seg[:40]!r}...: a name in a path is at most {NAME_MAX} bytes")
        else:
            parts.append(seg)
    return "/" + "/".join(parts)


def real_path(virtual: str) -> Path:
    """The file on disk for a virtual path; refuses a symbolic link (or .. ) that leads outside."""
    root = sandbox_root()
    try:
        target = (root / normalise(virtual).lstrip("/")).resolve()
    except (OSError, RuntimeError) as exc:  # a symbolic link loop
        raise SandboxEscape(f"{virtual!r} cannot be resolved ({exc})") from exc
    if target != root and root not in target.parents:
        raise SandboxEscape(f"{virtual!r} escapes the sandbox through a symbolic link")
    return target


def _virtual_of(target: Path, root: Path) -> str:
    rel = target.relative_to(root).as_posix()
    return "/" if rel == "." else "/" + rel


def canonical(path: str) -> str:
    """The virtual path of the file really meant: normalised, links inside the sandbox followed."""
    return _virtual_of(real_path(normalise(path)), sandbox_root())


_checked = canonical

SandboxPath = Annotated[str, AfterValidator(_checked),
                        Field(title=gettext_noop("Path"), description=gettext_noop('A path inside the sandbox; "/" is its root'),
                              max_length=500)]


def _checked_email(value: str) -> str:
    """The address as the mail goes out, so that rules and the reviewer read that one: Django's mail
    sends the domain through IDNA, which drops zero-width characters and soft hyphens and folds
    full-width letters ("x@exa\u200bmple.com" reached x@example.com past a rule on *@example.com).
    The domain is given in that ASCII form, lower case (a look-alike in another script shows as the
    xn-- domain it is); a local part that is not ASCII is refused (the validator's case-insensitive
    [A-Z] lets the Kelvin sign through, and the mail would go to an RFC 2047 word)."""
    try:
        validate_email(value)
    except ValidationError as exc:
        raise ValueError(f"{value!r} is not an email address") from exc
    local, _at, domain = value.rpartition("@")
    try:
        domain = punycode(domain).lower()
        validate_email(f"{local}@{domain}")
    except (UnicodeError, ValidationError) as exc:
        raise ValueError(f"{value!r} is not an email address") from exc
    if not local.isascii():
        raise ValueError(f"{value!r}: the part before @ must be ASCII")
    return f"{local}@{domain}"


def _one_line(value: str) -> str:
    """A mail header's text on one line: Django refuses a header with a line break (it could add
    headers, a Bcc) only as the mail is sent, after a reviewer approved it, as 'failed unexpectedly'."""
    if "\r" in value or "\n" in value:
        raise ValueError("must be one line (no line breaks)")
    return value


# --- execute_command: each program's own options; everything else is a path --------------------

COUNT = re.compile(r"[+-]?\d{1,9}")  # head/tail -n 5, -n -5, tail -n +5; du -d 2; grep -m 3
TEXT = re.compile(r"[^\x00]{1,200}")  # a grep pattern, a stat format: text, never a path


@dataclass(frozen=True)
class Program:
    """What a program may be given: flags, options with a value (name -> value shape, and how the
    value is called in messages), long names of either, and what its operands are."""

    flags: str = ""
    values: dict = field(default_factory=dict)  # "n": (COUNT, "N")
    long: dict = field(default_factory=dict)  # "lines": "n"
    operands: str = "paths"  # "paths" | "pattern, paths" (grep: the first one is the pattern) | "text"

    def usage(self, name):
        shown = [f"-{f}" for f in self.flags] + [f"-{o} {meta}" for o, (_shape, meta) in self.values.items()]
        shown += [f"--{n}" + (f"={self.values[s][1]}" if s in self.values else "") for n, s in self.long.items()]
        what = {"paths": "paths inside the sandbox", "pattern, paths": "a pattern, then paths inside the sandbox",
                "text": "text"}[self.operands]
        return f"{name} takes {' '.join(shown) or 'no options'} and {what}"


_N = (COUNT, "N")
PROGRAMS = {
    # no -L / -H anywhere (they follow symbolic links), no tail -f (it waits), no option naming a file
    # to read (grep -f, wc/du --files0-from, du -X): every file a program opens is an operand we checked
    "ls": Program("alhAR1tSrdFisnp", long={"all": "a", "almost-all": "A", "human-readable": "h",
                                            "recursive": "R", "reverse": "r", "directory": "d"}),
    "cat": Program("nbsAETv"),
    "head": Program("qv", {"n": _N, "c": _N}, {"lines": "n", "bytes": "c"}),
    "tail": Program("qv", {"n": _N, "c": _N}, {"lines": "n", "bytes": "c"}),
    "wc": Program("lwcmL", long={"lines": "l", "words": "w", "bytes": "c", "chars": "m"}),
    "du": Program("sahckmb", {"d": _N}, {"summarize": "s", "human-readable": "h", "max-depth": "d"}),
    "stat": Program("tf", {"c": (TEXT, "FORMAT")}, {"terse": "t", "format": "c"}),
    "echo": Program(operands="text"),
    "grep": Program("incEFGwxvolLHhsqar", {"e": (TEXT, "PATTERN"), "m": _N, "A": _N, "B": _N, "C": _N},
                    {"ignore-case": "i", "line-number": "n", "count": "c", "extended-regexp": "E",
                     "fixed-strings": "F", "word-regexp": "w", "invert-match": "v", "only-matching": "o",
                     "files-with-matches": "l", "recursive": "r", "regexp": "e", "max-count": "m"},
                    operands="pattern, paths"),
}
ALLOWED_COMMANDS = tuple(PROGRAMS)


@dataclass
class Parsed:
    program: str
    options: list  # [(letter, value or None)] in order
    pattern: str | None  # grep's pattern given as its first operand
    paths: list  # canonical virtual paths
    text: list  # echo's arguments, verbatim

    def canonical(self):
        """The command as validated: options split, grep's pattern as -e when it looks like an
        option, paths absolute and normalised (so no path can be read as an option)."""
        words = [self.program]
        for letter, value in self.options:
            words += [f"-{letter}"] + ([value] if value is not None else [])
        if self.pattern is not None:
            words += ["-e", self.pattern] if self.pattern.startswith("-") else [self.pattern]
        return shlex.join(words + self.paths + self.text)


def _value(program, spec, letter, value, shown):
    shape, meta = spec.values[letter]
    if value is None:
        raise ValueError(f"{program}: {shown} needs a value ({shown} {meta})")
    if not shape.fullmatch(value):
        raise ValueError(f"{program}: {shown} {value!r} is not a valid {meta}")
    return value


def parse_command(command: str) -> Parsed:
    """The command taken apart and checked, or ValueError saying what is not allowed and why."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"cannot parse the command: {exc}") from exc
    if not argv:
        raise ValueError("the command is empty")
    program = argv[0]
    if program not in PROGRAMS:
        raise ValueError(f"{program!r} is not allowed; allowed commands: {', '.join(ALLOWED_COMMANDS)}")
    for arg in argv[1:]:
        if arg in SHELL_OPERATORS or arg.startswith(("$(", "`")) or "\x00" in arg:
            raise ValueError(f"no shell here: {arg!r} (pipes, redirection and substitution are not available)")
    spec = PROGRAMS[program]
    if spec.operands == "text":  # echo: its arguments are printed, never opened
        return Parsed(program, [], None, [], argv[1:])
    options, operands, ended, i = [], [], False, 1
    while i < len(argv):
        arg, i = argv[i], i + 1
        if ended or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
        elif arg == "--":
            ended = True  # what follows is an operand (a path), whatever it looks like
        elif arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            letter = spec.long.get(name)
            if letter is None:
                raise ValueError(f"{program}: option --{name} is not allowed here; {spec.usage(program)}")
            if letter in spec.values:
                if not has_value:
                    value, i = (argv[i], i + 1) if i < len(argv) else (None, i)
                options.append((letter, _value(program, spec, letter, value, f"--{name}")))
            elif has_value:
                raise ValueError(f"{program}: --{name} takes no value")
            else:
                options.append((letter, None))
        else:  # -la, -n5, -in 5: a cluster of short options, the last one may take a value
            j = 1
            while j < len(arg):
                letter, j = arg[j], j + 1
                if letter in spec.values:
                    value = arg[j:] or None
                    if value is None and i < len(argv):
                        value, i = argv[i], i + 1
                    options.append((letter, _value(program, spec, letter, value, f"-{letter}")))
                    break
                if letter not in spec.flags:
                    raise ValueError(f"{program}: option -{letter} (in {arg!r}) is not allowed here; "
                                     f"{spec.usage(program)}")
                options.append((letter, None))
    pattern = None
    if spec.operands == "pattern, paths" and not any(letter == "e" for letter, _ in options):
        if not operands:
            raise ValueError(f"{program}: give a pattern to search for; {spec.usage(program)}")
        pattern = operands.pop(0)
        if not TEXT.fullmatch(pattern):
            raise ValueError(f"{program}: the pattern must be 1 to 200 characters")
    paths = []
    for operand in operands:
        try:
            paths.append(canonical(operand))
        except SandboxEscape as exc:
            raise SandboxEscape(f"{program}: every argument that is not one of its options is a path, and "
                                f"{exc}") from exc
    return Parsed(program, options, pattern, paths, [])


def _checked_command(command: str) -> str:
    """Allow-listed program, its own options only, no shell, every path inside the sandbox."""
    return parse_command(command).canonical()


MOUNT = "/sandbox"  # where the sandbox appears inside bubblewrap's namespaces
_SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _bwrap_argv(bwrap, root):
    """bubblewrap: fresh namespaces (no network), only the sandbox (read-only) and the system's
    programs and libraries (read-only) visible, no capabilities, killed with its parent."""
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for tree in _SYSTEM_TREES:
        if os.path.islink(tree):
            argv += ["--symlink", os.readlink(tree), tree]
        elif os.path.isdir(tree):
            argv += ["--ro-bind", tree, tree]
    return argv + ["--dev", "/dev", "--ro-bind", str(root), MOUNT, "--chdir", MOUNT, "--"]


@functools.cache
def _bwrap_probe(bwrap):
    """(usable, why not): one real run of `true` the way commands run, once per process."""
    true = shutil.which("true", path="/usr/bin:/bin") or "/bin/true"
    with tempfile.TemporaryDirectory() as probe_root:
        try:
            done = subprocess.run(_bwrap_argv(bwrap, probe_root) + [true], capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=10, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = f"bwrap could not run: {exc}"
        else:
            if done.returncode == 0:
                log.info("ops sandbox: commands run isolated by %s", bwrap)
                return True, ""
            reason = f"bwrap failed: {done.stderr.decode(errors='replace').strip() or done.returncode}"
    log.warning("ops sandbox: %s; commands run without namespace isolation (validated arguments only)", reason)
    return False, reason


def isolation():
    """The bwrap binary to run commands with, or None; ToolError when required and not possible."""
    mode = str(getattr(settings, "AGUI_SANDBOX_BWRAP", "auto") or "auto").lower()
    if mode not in ("auto", "off", "required"):
        raise ToolError(f"AGUI_SANDBOX_BWRAP={mode!r} is not one of auto, off, required; nothing was run")
    if mode == "off":
        return None
    bwrap = shutil.which("bwrap")
    usable, reason = _bwrap_probe(bwrap) if bwrap else (False, "bwrap (bubblewrap) is not installed")
    if usable:
        return bwrap
    if mode == "required":
        raise ToolError(f"commands must run isolated (AGUI_SANDBOX_BWRAP=required), but {reason}; nothing was run")
    return None


def _argv_for(command: str, inside: str | None = None):
    """The argv actually run: the program's absolute path, its checked options, grep's pattern,
    then "--" and every path as an absolute path into the sandbox (under `inside` when given: the
    sandbox's mount point in bubblewrap's namespaces). Parses again: nothing unchecked runs."""
    parsed = parse_command(command)
    out = [shutil.which(parsed.program, path="/usr/bin:/bin") or parsed.program]
    if parsed.text:
        return out + parsed.text
    for letter, value in parsed.options:
        out += [f"-{letter}"] + ([value] if value is not None else [])
    if parsed.pattern is not None:
        out += ["-e", parsed.pattern]
    root = sandbox_root()
    paths = []
    for virtual in parsed.paths:
        target = real_path(virtual)  # a link swapped in since validation is refused here
        paths.append(str(target) if inside is None else (inside + _virtual_of(target, root)).rstrip("/"))
    return out + (["--", *paths] if paths else [])


def _size(path):
    try:
        target = real_path(path)
        return target.stat().st_size if target.is_file() else None
    except (OSError, SandboxEscape):
        return None


def _at(path):
    """The file a validated (canonical) path names, checked again as the tool acts: a link swapped in
    since validation is refused, whether it leads out or to another file inside than policy saw."""
    try:
        target = real_path(path)
    except SandboxEscape as exc:
        raise ToolError(str(exc)) from exc
    now = _virtual_of(target, sandbox_root())
    if now != normalise(path):
        raise ToolError(f"{path} now leads to {now} (a symbolic link changed after it was checked); nothing was done")
    return target


@contextlib.contextmanager
def _on_disk(what):
    """What the file system refuses (a folder where a file is on the way, a name too long, a full
    disk) as the tool's own error, said to the model: it was 'failed unexpectedly', which after
    an approval told nobody why. The error's own file name is not repeated: it is the real path."""
    try:
        yield
    except OSError as exc:
        raise ToolError(f"could not {what}: {exc.strerror or type(exc).__name__}") from exc


def system_files(*arguments):
    """The one "system files" rule: deny when any of these path arguments is /etc or under it.

    Every tool that changes files carries it first, with all its path arguments, so no argument
    (a rename's source or destination alike) reaches a system file another way."""
    return {"name": "system files", "action": "deny", "when": {"any": [
        leaf for name in arguments for leaf in ({"path": f"args.{name}", "op": "eq", "value": "/etc"},
                                               {"path": f"args.{name}", "op": "glob", "value": "/etc/*"})]}}


# --- read-only tools ----------------------------------------------------------------------------


@tool(summary=gettext_noop("List the files in a folder of the sandbox"),
      approval_mode="never", risk="low", reversible=True, idempotent=True,
      describe=lambda a: _("List the files in %(path)s") % a)
def list_files(ctx, path: SandboxPath = "/"):
    """List the files and directories at a path in the sandbox."""
    target = _at(path)
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory")
    rows = []
    with _on_disk(f"list {path}"):
        for entry in sorted(target.iterdir(), key=lambda p: p.name)[:200]:
            if entry.is_symlink():  # never followed here: it may lead out of the sandbox
                rows.append(f"link {entry.name}")
                continue
            kind = "dir " if entry.is_dir() else "file"
            size = "" if entry.is_dir() else f" {entry.stat().st_size} bytes"
            rows.append(f"{kind} {entry.name}{size}")
    return f"{path}: " + ("\n" + "\n".join(rows) if rows else "empty")


@tool(summary=gettext_noop("Read a text file in the sandbox"),
      approval_mode="never", risk="low", reversible=True, idempotent=True,
      describe=lambda a: _("Read %(path)s") % a)
def read_file(ctx, path: SandboxPath):
    """Read a text file in the sandbox (at most 20,000 characters)."""
    target = _at(path)
    if not target.is_file():
        raise ToolError(f"{path} does not exist or is not a file")
    with _on_disk(f"read {path}"):
        return target.read_text(errors="replace")[:20_000]


# --- writing ---------------------------------------------------------------------------------


def _bytes(count):
    """A byte count as the language a description is said in writes it ("12,345", "12 345")."""
    return number_format(count, force_grouping=True)


def _describe_write(a):
    size = _size(a["path"])
    new = _bytes(len(a["content"].encode()))
    if a["overwrite"] and size is not None:
        return _("Overwrite %(path)s (%(size)s bytes now) with %(new)s bytes; its current content is lost") % {
            "path": a["path"], "size": _bytes(size), "new": new}
    if a["overwrite"]:
        return _("Write %(new)s bytes to %(path)s (overwrite allowed; the file does not exist yet)") % {
            "path": a["path"], "new": new}
    return _("Create %(path)s with %(new)s bytes (refused if it already exists)") % {"path": a["path"], "new": new}


@tool(
    summary=gettext_noop("Write a text file in the sandbox"),
    approval_mode="conditional",
    conditions=[system_files("path"),
                {"name": "overwrite", "when": {"path": "args.overwrite", "op": "eq", "value": True},
                 "action": "gate"}],
    approver="requester", risk="medium", reversible=False,
    describe=_describe_write,
    impact=lambda a: (_("The current content of %(path)s is replaced and cannot be restored from here")
                      if a["overwrite"] else _("A new file %(path)s appears in the sandbox")) % a,
)
def write_file(ctx, path: SandboxPath,
               content: Annotated[str, Field(max_length=MAX_FILE_BYTES, title=gettext_noop("Content"))],
               overwrite: Annotated[bool, Field(title=gettext_noop("Overwrite"))] = False):
    """Write a text file in the sandbox. Set overwrite to replace an existing file."""
    target = _at(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory")
    if target.exists() and not overwrite:
        raise ToolError(f"{path} already exists; ask to overwrite it explicitly")
    with _on_disk(f"write {path}"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return f"Wrote {len(content.encode())} bytes to {path}."


def _rename_refuses(a):
    """refuses=: in the requester's sandbox, a rename onto itself (refused whatever happens first) or
    onto a file that exists now (a rename never writes over one), said to a reviewer whose edit it is."""
    try:
        src, dst = real_path(a["source"]), real_path(a["destination"])
    except SandboxEscape:
        return None  # the tool says why when it runs
    if src == dst:
        return _("%(path)s is both the file to rename and its new name: give it another new path.") % {
            "path": a["destination"]}
    if dst.exists():
        return _("%(path)s already exists, and a rename never writes over a file: give it another new path.") % {
            "path": a["destination"]}
    return None


@tool(
    summary=gettext_noop("Rename or move a file in the sandbox"),
    approval_mode="conditional", conditions=[system_files("source", "destination"),
                                             {"name": "every other rename", "action": "gate"}],
    approver="requester", risk="medium", reversible=True,
    describe=lambda a: _("Rename %(source)s to %(destination)s: copy %(source)s to %(destination)s, then delete "
                         "%(source)s (refused if %(destination)s exists)") % a,
    impact=lambda a: _("%(source)s no longer exists afterwards; its content lives on as %(destination)s") % a,
    refuses=_rename_refuses,
)
def rename_file(ctx, source: Annotated[SandboxPath, Field(title=gettext_noop("Current path"))],
                destination: Annotated[SandboxPath, Field(title=gettext_noop("New path"))]):
    """Rename (move) a file inside the sandbox. It copies the file, then deletes the original."""
    src, dst = _at(source), _at(destination)
    if not src.is_file():
        raise ToolError(f"{source} does not exist or is not a file")
    if dst.exists():
        raise ToolError(f"{destination} already exists")
    with _on_disk(f"copy {source} to {destination}"):
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    with _on_disk(f"delete {source} after copying it to {destination}"):
        src.unlink()
    return f"Copied {source} to {destination}, then deleted {source}."


@tool(
    summary=gettext_noop("Delete a file in the sandbox"),
    approval_mode="conditional",
    conditions=[
        system_files("path"),
        {"name": "every other file", "action": "gate"},
    ],
    approver="group:reviewers", risk="high", reversible=False, timeout_seconds=900,
    escalation="group:oncall", escalation_fraction=0.75,
    describe=lambda a: (_("Delete file: %(path)s (%(size)s bytes)") if _size(a["path"]) else _("Delete file: %(path)s"))
    % {"path": a["path"], "size": _bytes(_size(a["path"]) or 0)},
    impact=lambda a: _("The file %(path)s will be permanently deleted") % a,
)
def delete_file(ctx, path: SandboxPath):
    """Delete a file in the sandbox."""
    target = _at(path)
    if not target.is_file():
        raise ToolError(f"{path} does not exist or is not a file")
    with _on_disk(f"delete {path}"):
        target.unlink()
    return f"Deleted {path}."


@tool(summary=gettext_noop("Delete a folder of the sandbox and everything in it"),
      approval_mode="deny", risk="critical", reversible=False,
      describe=lambda a: _("Delete the directory %(path)s and everything in it") % a,
      impact=lambda a: _("Every file under %(path)s will be permanently deleted") % a)
def delete_directory(ctx, path: SandboxPath):
    """Delete a directory in the sandbox with everything in it."""
    target = _at(path)
    if target == sandbox_root():
        raise ToolError("the sandbox root itself cannot be deleted")
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory")
    with _on_disk(f"delete the directory {path}"):
        shutil.rmtree(target)
    return f"Deleted the directory {path}."


# --- mail and commands -------------------------------------------------------------------------


@tool(
    summary=gettext_noop("Send an email"),
    approval_mode="always", approver="group:reviewers", risk="high", reversible=False,
    describe=lambda a: _("Send an email to %(to)s, subject: %(subject)s") % a,
    impact=lambda a: _("The email goes to %(to)s and cannot be recalled once sent") % a,
)
def send_email(ctx,
               to: Annotated[str, AfterValidator(_checked_email), Field(max_length=254, title=gettext_noop("Recipient"))],
               subject: Annotated[str, AfterValidator(_one_line), Field(min_length=1, max_length=200,
                                                                        title=gettext_noop("Subject"))],
               body: Annotated[str, Field(max_length=20_000, title=gettext_noop("Message"))]):
    """Send an email (through the site's mail server)."""
    EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [to],
                 headers={"X-Agui-Tool-Call": ctx.tool_call_id}).send(fail_silently=False)
    return f"Sent the email to {to} (subject: {subject})."


@tool(
    summary=gettext_noop("Run an allowed read-only command in the sandbox"),
    approval_mode="model", approver="requester", risk="medium", reversible=True,
    describe=lambda a: _("Run the command: %(command)s (read-only, inside the sandbox)") % a,
    impact=lambda a: _("Read-only: it lists or prints files in the sandbox; nothing is changed"),
)
def execute_command(ctx, command: Annotated[str, AfterValidator(_checked_command),
                                            Field(max_length=500, title=gettext_noop("Command"), description=(
                                                f"One of: {', '.join(ALLOWED_COMMANDS)}, with that program's own "
                                                "options only; every other argument is a path in the sandbox"))]):
    """Run an allow-listed read-only command in the sandbox (no shell: no pipes or redirection).
    Each program takes only its own listed options; every other argument is a path in the sandbox."""
    root = sandbox_root()
    bwrap = isolation()
    try:
        argv = _argv_for(command, inside=MOUNT if bwrap else None)
    except ValueError as exc:  # SandboxEscape included: called without validation, or a link swapped in
        raise ToolError(str(exc)) from exc
    if bwrap:
        argv = _bwrap_argv(bwrap, root) + argv
    home = MOUNT if bwrap else str(root)
    try:
        done = subprocess.run(
            argv, cwd=root, capture_output=True, stdin=subprocess.DEVNULL, timeout=settings.AGUI_COMMAND_TIMEOUT,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home}, shell=False, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"the command timed out after {settings.AGUI_COMMAND_TIMEOUT:g} s and was stopped") from exc
    except OSError as exc:
        raise ToolError(f"the command could not start: {exc.strerror}") from exc
    output = (done.stdout + done.stderr).decode(errors="replace")
    for shown in ([MOUNT] if bwrap else []) + [str(root)]:  # the model sees virtual paths only
        output = output.replace(shown + "/", "/").replace(shown, "/")
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT] + f"\n[... {len(output) - MAX_OUTPUT} more characters]"
    return f"exit code {done.returncode}\n{output}".rstrip()


AGENT = Agent(
    name="ops",
    title=gettext_noop("Ops assistant"),
    description=gettext_noop("Works on files in a sandbox, sends email and runs read-only commands; risky steps wait for "
    "you or a reviewer."),
    system_prompt=(
        "You are a careful operations assistant. You act only through your tools, on files inside a sandbox "
        'whose root is "/". Describe each step honestly before taking it. Never claim an action happened '
        "unless a tool result says so. If a person rejects an action, or a tool is blocked by policy, do not "
        "try to reach the same goal another way unless the user tells you to."
    ),
    tools=[list_files, read_file, write_file, rename_file, delete_file, delete_directory, send_email,
           execute_command],
)
