"""Every third-party module the code imports is declared in pyproject.toml (not only brought by another).

The installed distributions say which one provides a module (importlib.metadata); an import counts
wherever it stands, inside functions and `try` blocks too.
"""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
while not (ROOT / "pyproject.toml").exists():  # wherever this file sits under tests/
    ROOT = ROOT.parent
OURS = {"agui_project", "agents", "approvals", "state", "webhooks", "people", "tests", "scripts", "bench",
        "agui_inbox_client"}  # clients/python: its tests import it from its source (it declares its own httpx)
# The OpenAI SDK's own HTTP library (httpx2 from openai 3, httpx before): agents/llm/openai_chat.py catches its
# errors, whichever one the installed SDK streams with; the SDK decides which, so openai declares it.
SDK_TRANSPORT = {"httpx", "httpx2"}
MAF_CLIENT = ROOT / "tests" / "maf_client"


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(*groups):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for group in groups:
        requirements += project["optional-dependencies"][group]
    return {_normal(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in requirements}


def _undeclared(folders, declared, exempt=frozenset()):
    local = {p.stem for folder in ("scripts", "tests") for p in (ROOT / folder).rglob("*.py")}  # via sys.path
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if "node_modules" in path.parts or path.parent == MAF_CLIENT:
                continue  # the MAF client runs in its own venv: test_the_maf_client_pins_what_it_imports
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in OURS or top in local or top in exempt:
                        continue
                    dists = {_normal(d) for d in providers.get(top, [top])}
                    if not dists & declared:
                        missing.setdefault(top, []).append(str(path.relative_to(ROOT)))
    return missing


def test_the_application_declares_what_it_imports():
    assert _undeclared(["agui_project", "agents", "approvals", "state", "webhooks", "people", "scripts"], _declared(),
                       SDK_TRANSPORT) == {}


def test_the_tests_declare_what_they_import():
    assert _undeclared(["tests"], _declared("dev")) == {}


def test_the_maf_client_pins_what_it_imports():
    """tests/maf_client runs in .venv-maf (agent-framework-ag-ui needs ag-ui-protocol<0.2): its
    imports are pinned in its own requirements.txt, not in the project's extras."""
    pinned = {_normal(line.split("==")[0]) for line in (MAF_CLIENT / "requirements.txt").read_text().splitlines()
              if "==" in line and not line.lstrip().startswith("#")}
    imported = {"agent_framework": "agent-framework-core", "httpx": "httpx"}
    found = set()
    for path in MAF_CLIENT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    third_party = {name for name in found if name not in sys.stdlib_module_names}
    assert third_party <= set(imported), f"tell this test which distribution provides {third_party - set(imported)}"
    assert {_normal(imported[name]) for name in third_party} <= pinned
