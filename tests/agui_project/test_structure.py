"""The house's structure, read from the source with `ast` (nothing is imported or run).

Layering (DESIGN.md, "apps are layers; arrows point down only"):
- no import cycle anywhere in agui_project/, agents/, approvals/, state/, counting every import
  at any depth (inside functions, methods, `if` blocks) -- an import hidden in a function is
  still a dependency, it only moves the failure from start-up to the first call;
- approvals/ and state/ never import agents/; state/ never imports approvals/;
- webhooks/ sits on top and imports approvals/ only (approvals.signals carry the tool outcomes of
  agents too); no other app imports webhooks/;
- approvals/ MAY import state/ (a downward arrow: the inbox shows a request's thread state
  through `state.services`); since state imports neither, that can never close a loop;
- agui_project/ is plumbing under every app (auth, errors, the Redis client, input checks) plus
  the wiring above them: only the wiring (WIRING: URLs, ASGI routing, the templates' context
  processor) imports an app.

Status writers: one module, agents/transitions.py, writes Run and ToolCall statuses (it reads the
models' TRANSITIONS maps), so no other module under agents/ assigns `x.status = ...` or passes
`status=` to `.update()` / `.create()` / `.get_or_create()` / `.update_or_create()` / a model's
constructor.
"""

import ast
import logging
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agui_project", "agents", "approvals", "state", "webhooks", "people")
STATUS_OWNER = "agents.transitions"
APPS = {"agents", "approvals", "state", "webhooks", "people"}
WIRING = {"agui_project.urls", "agui_project.asgi", "agui_project.context"}
WRITE_CALLS = {"update", "create", "get_or_create", "update_or_create", "bulk_create"}


def _modules():
    """{dotted module name: path} for every .py file of our packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _ancestors(name):
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _imports(name, path):
    """[(imported module, line)] of module `name`, at any depth.

    `from pkg import sub` where `sub` is a submodule imports the submodule; importing `a.b.c`
    also runs the packages `a.b` and `a` (skipped when they are this module's own ancestors:
    Python has already started those before the module itself).
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in MODULES else base)
        for target in targets:
            while target and target not in MODULES:  # `import x.y.attr` or a name that is no module
                target = target.rpartition(".")[0]
            if not target or target == name:
                continue
            for module in {target} | (_ancestors(target) - _ancestors(name)):
                if module in MODULES and module != name:
                    out.append((module, node.lineno))
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles():
    """Strongly connected components with more than one module (Tarjan), each as a loop path."""
    index, low, stack, on_stack, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w, _ in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return [_loop_in(comp) for comp in comps]


def _loop_in(comp):
    """One concrete loop through a strongly connected component, with the importing lines."""
    start = min(comp)
    # breadth-first from start back to start inside the component
    paths = {start: []}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w, line in GRAPH[v]:
            if w not in comp:
                continue
            step = paths[v] + [(v, line, w)]
            if w == start:
                members = ", ".join(sorted(comp))
                hops = " -> ".join(f"{a}:{ln}" for a, ln, _ in step) + f" -> {start}"
                return f"{hops}   (component: {members})"
            if w not in paths:
                paths[w] = step
                queue.append(w)
    return ", ".join(sorted(comp))


def test_no_import_cycles():
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_layering():
    wrong = []
    for name, imports in GRAPH.items():
        app = name.split(".")[0]
        for target, line in imports:
            to = target.split(".")[0]
            if app in ("approvals", "state") and to == "agents":
                wrong.append(f"{name}:{line} imports {target} ({app} never imports agents)")
            if app in ("agents", "approvals", "state") and to == "webhooks":
                wrong.append(f"{name}:{line} imports {target} (webhooks sits on top: apps send it signals)")
            if app == "webhooks" and to == "agents":
                wrong.append(f"{name}:{line} imports {target} (webhooks hears agents through approvals.signals)")
            if app == "people" and to in APPS - {"people"}:
                wrong.append(f"{name}:{line} imports {target} (people sits under every app: a profile knows no app)")
            if app == "state" and to == "approvals":
                wrong.append(f"{name}:{line} imports {target} (state never imports approvals)")
            if app == "agui_project" and to in APPS and name not in WIRING:
                wrong.append(f"{name}:{line} imports {target} (project plumbing never imports an app)")
    assert not wrong, "\n".join(wrong)


MCP = "agents.mcp_servers"
MCP_MAY_IMPORT = ("agents.runtime.tools", "agents.runtime.inputs", "agents.models", "agents.registry",
                  "agents.services")  # under the runner: what an MCP tool needs of agents


def test_mcp_servers_sit_under_the_runner():
    """agents/mcp_servers/ (ARCHITECTURE.md): the catalog's Agent and the runner use it, so it never
    imports the runner, workflows, the catalog or the AG-UI package."""
    wrong = []
    for name, imports in GRAPH.items():
        if name != MCP and not name.startswith(MCP + "."):
            continue
        for target, line in imports:
            if target.split(".")[0] == "agents" and target not in ("agents", "agents.runtime") \
                    and not target.startswith(MCP) and not target.startswith(MCP_MAY_IMPORT):
                wrong.append(f"{name}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


RUN_MODELS = {"Run", "ToolCall"}
RUN_RELATIONS = {"runs", "tool_calls", "continuation", "parent_run", "run"}  # managers / rows reached from others


def _root_names(node):
    """The names an expression is built from: `Run.objects.filter(...).update` -> {"Run", "objects", ...}."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _other_models_status(value):
    """`Order.Status.REFUNDED`: a status of a model that is not a Run or a ToolCall."""
    return (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute)
            and value.value.attr == "Status" and isinstance(value.value.value, ast.Name)
            and value.value.value.id not in RUN_MODELS)


def _status_writes(path):
    """(line, what) for each write that may set a Run's or a ToolCall's status.

    `x.status = v` (also inside a tuple assignment) unless v is another model's `Status.X`;
    `status=` passed to update/create/... on a query rooted at Run or ToolCall or reached through
    a run relation (`run.tool_calls.filter(...).update(...)`), or to `Run(...)` / `ToolCall(...)`.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple):
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else [None] * len(target.elts)
                    pairs = list(zip(target.elts, values, strict=False))
                for t, v in pairs:
                    if isinstance(t, ast.Attribute) and t.attr == "status" and not _other_models_status(v):
                        yield node.lineno, "assigns .status"
        elif isinstance(node, ast.Call) and any(k.arg == "status" for k in node.keywords):
            func = node.func
            if isinstance(func, ast.Name) and func.id in RUN_MODELS:
                yield node.lineno, f"{func.id}(status=...)"
            elif (isinstance(func, ast.Attribute) and func.attr in WRITE_CALLS
                  and _root_names(func.value) & (RUN_MODELS | RUN_RELATIONS)):
                yield node.lineno, f".{func.attr}(status=...)"


def test_only_transitions_writes_run_and_toolcall_statuses():
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("agents") or name == STATUS_OWNER or ".migrations." in name:
            continue
        lines = path.read_text().splitlines()
        for line, what in _status_writes(path):
            wrong.append(f"{name}:{line} {what}: {lines[line - 1].strip()}")
    assert not wrong, "status written outside agents/transitions.py:\n" + "\n".join(wrong)


def test_an_illegal_transition_raises_and_is_logged(caplog):
    """The maps are enforced: a move they do not allow raises before any query, with an error log."""
    from agents.models import Run, ToolCall
    from agents.transitions import move_call, move_run

    with caplog.at_level(logging.ERROR, logger="agents.transitions"):
        with pytest.raises(ValueError, match="succeeded -> running is not an allowed transition"):
            move_run("any-run", Run.Status.RUNNING, leaving=[Run.Status.SUCCEEDED])  # a final run never restarts
        with pytest.raises(ValueError, match="nothing may become proposed"):
            move_call("any-call", ToolCall.Status.PROPOSED)
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(logged) == 2 and "succeeded -> running" in logged[0] and "proposed" in logged[1]
