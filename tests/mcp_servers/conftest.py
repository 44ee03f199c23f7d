"""MCP servers for the tests: the demo notes server and the stock filesystem server, as subprocesses."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FS_SERVER = ROOT / "tests" / "mcp_fs" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


def notes_values(notes_file, agents=("notes",)):
    return {"transport": "stdio", "command": sys.executable, "args": ["-m", "agents.mcp_servers.demo_notes"],
            "cwd": str(ROOT), "env": {"AGUI_NOTES_FILE": str(notes_file)}, "agents": list(agents)}


def fs_values(root, agents=("notes",)):
    return {"transport": "stdio", "command": shutil.which("node") or "node", "args": [str(FS_SERVER), str(root)],
            "agents": list(agents)}


def hang_values(agents=("notes",)):
    return {"transport": "stdio", "command": sys.executable, "args": ["-m", "tests.mcp_servers.hang_server"],
            "cwd": str(ROOT), "agents": list(agents)}


def need_filesystem_server():
    """The npm server (make test installs it: tests/mcp_fs); skipped without npm, but never on CI."""
    if FS_SERVER.exists() and shutil.which("node"):
        return
    reason = "@modelcontextprotocol/server-filesystem is not installed (npm ci in tests/mcp_fs)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _commands_by_token(settings):
    """These tests register stdio servers with an admin's API token (test_mcp_api.py checks the default
    that refuses it)."""
    settings.AGUI_MCP_COMMANDS_BY_TOKEN = True


@pytest.fixture
def fresh_mcp():
    """The test starts and ends with no MCP tool and no open MCP session in this process (rolled-back
    rows leave none behind). Autouse here; the live-stack tests in tests/integration import it."""
    from agents.mcp_servers import catalog, client

    catalog.reset()
    yield
    client.hub.close_all()
    catalog.reset()


@pytest.fixture(autouse=True)
def _forget_mcp_tools(fresh_mcp):
    yield


@pytest.fixture
def notes_file(tmp_path):
    return tmp_path / "notes.json"


@pytest.fixture
def notes_http(notes_file):
    """The demo server over Streamable HTTP, a subprocess on a free port of 127.0.0.1: its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "agents.mcp_servers.demo_notes", "--http", str(port)], cwd=ROOT,
                            env={**os.environ, "AGUI_NOTES_FILE": str(notes_file)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)
