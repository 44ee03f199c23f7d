"""What a listed MCP tool call adds over the tool's own time, in a process like a worker's.

Run by `make bench` (scenario `mcp`) as `python bench/mcp_call.py --calls N` with the stack's
environment; prints one JSON object. It registers bench/mcp_bench_server.py (stdio, `work(ms)`,
read-only: no approval), then per call times what the runner does for an MCP tool before and
around its execution: validation against the inputSchema, the policy (registry lookup, the
policy row, grants), the hop into the MCP client's loop, JSON-RPC over the pipe and the server's
framework, and the result text; the tool's own time is what the server measured inside `work`.
The database writes every tool call makes (the ToolCall row, the claim, the result message) are
the same for our own tools and not counted here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402

from agents.mcp_servers import catalog, client, services  # noqa: E402
from approvals import policy  # noqa: E402

NAME = "bench"


def pct(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return round(values[lo] + (values[hi] - values[lo]) * (k - lo), 3)


def measure(tool, user, ms, calls):
    added, own, policy_ms = [], [], []
    context = {"user": user, "agent": "notes", "thread": "bench-mcp"}
    for i in range(calls + 20):  # the first 20 warm up (imports, the session, caches)
        t0 = time.perf_counter()
        arguments = tool.validate({"ms": ms})
        verdict = policy.evaluate(tool.name, arguments, context)
        assert verdict.action == "auto", verdict
        t1 = time.perf_counter()
        text = tool.run(None, arguments)
        t2 = time.perf_counter()
        if i < 20:
            continue
        took = json.loads(text)["own_ms"]
        own.append(took)
        policy_ms.append((t1 - t0) * 1000)
        added.append((t2 - t0) * 1000 - took)
    return {"added_ms": {"p50": pct(added, 50), "p95": pct(added, 95), "max": round(max(added), 3), "n": len(added)},
            "own_ms": {"p50": pct(own, 50)}, "validate_and_policy_ms": {"p50": pct(policy_ms, 50),
                                                                       "p95": pct(policy_ms, 95)}}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    user = User.objects.filter(is_superuser=False).first()
    row = services.save_server(NAME, {"transport": "stdio", "command": sys.executable,
                                      "args": [str(ROOT / "bench" / "mcp_bench_server.py")], "cwd": str(ROOT),
                                      "agents": ["notes"]})
    try:
        if not row.healthy:
            raise SystemExit(f"the bench MCP server did not start: {row.error}")
        tool = catalog.get(f"{NAME}__work")
        out = {f"work_{ms}ms": measure(tool, user, ms, args.calls) for ms in (0, 10)}
    finally:
        client.hub.close_all()
        services.delete_server(NAME)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
