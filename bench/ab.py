"""Two checkouts side by side: paired request timings on a machine whose speed drifts.

    python bench/ab.py BASE_DIR [NEW_DIR]    # NEW_DIR defaults to this checkout

Starts each checkout's bench stack (bench/run.py's Stack: Daphne, a Celery worker, an embedded
Redis, SQLite or DATABASE_URL, the fake model; no peer), then times the same requests against
both, alternating one by one (which side goes first alternates too), with the bench's lean
client: POST /agui/banking/ -> RUN_STARTED, a 404, an AG-UI resume -> TOOL_CALL_RESULT, and the
decide API (finn approves a paused transfer) with its TOOL_CALL_RESULT on the thread WebSocket. Both
sides meet the same machine at the same minute, so a change of a few hundred µs shows that
separate `bench/run.py` runs (whose figures move by 10-30 % from one run to the next here) hide.
AB_POSTS / AB_RESUMES / AB_DECISIONS set the counts (100 / 40 / 40). Prints p50 and p95 of each side.
AB_DB_RTT_MS (with a PostgreSQL DATABASE_URL): both stacks reach the database through
bench/latency_proxy.py, which adds that much to every round trip (a database on another host).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "AB-STACK "


def serve_stack():
    """In a checkout's root (cwd): start its stack, print what the client needs, stop at stdin's end."""
    sys.path.insert(0, str(Path.cwd() / "bench"))
    import run

    stack = run.Stack(argparse.Namespace(peer=False, pool="prefork", concurrency=2))
    try:
        stack.start()
        print(MARK + json.dumps({"url": stack.url, "tokens": stack.djtask("tokens"), "password": run.PASSWORD}), flush=True)
        sys.stdin.read()
    finally:
        stack.stop()


def start(checkout, side):
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # each stack its own Redis
    if env.get("DATABASE_URL", "").startswith("postgres"):  # and its own database (run.py: <name>_bench)
        from urllib.parse import urlsplit

        parts = urlsplit(env["DATABASE_URL"])
        env["DATABASE_URL"] = parts._replace(path=f"{parts.path.rstrip('/') or '/postgres'}_{side}").geturl()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve"], cwd=checkout, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith(MARK):
            return proc, json.loads(line[len(MARK):])
    raise SystemExit(f"the stack of {checkout} did not start")


def latency_proxy(url, rtt):
    """Start bench/latency_proxy.py before the database of `url` and point DATABASE_URL at it."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proc = subprocess.Popen([sys.executable, str(HERE / "latency_proxy.py"), "--to",
                             f"{parts.hostname or '127.0.0.1'}:{parts.port or 5432}", "--rtt-ms", rtt],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[1])
    os.environ["DATABASE_URL"] = parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0]}@127.0.0.1:{port}"
                                                if "@" in parts.netloc else f"127.0.0.1:{port}").geturl()
    print(f"database round trips +{rtt} ms (bench/latency_proxy.py on port {port})", flush=True)
    return proc


def q(values):
    values = sorted(values)
    return f"p50 {statistics.median(values):6.2f} p95 {values[max(0, int(len(values) * 0.95) - 1)]:6.2f} ms"


async def measure(info, posts, resumes, decisions):
    sys.path.insert(0, str(HERE))
    import run
    from rawhttp import Connection

    conns = {side: Connection.for_url(i["url"]) for side, i in info.items()}
    clients = {}
    for side, i in info.items():  # the bench's client, signed in as the demo users of that side's stack
        clients[side] = client = run.Client(None, i["url"])
        client.tokens, run.PASSWORD = i["tokens"], i["password"]
        for user in ("alice", "finn"):
            client.sessions[user] = await client.login(user)

    post = {side: partial(conns[side].sse, "/agui/banking/", headers={"Authorization": "Bearer " + i["tokens"]["alice"]})
            for side, i in info.items()}  # body -> alice's AG-UI POST to that side, its frames

    out = {side: {"POST -> RUN_STARTED": [], "a 404": [], "resume -> TOOL_CALL_RESULT": [], "decide API": [],
                  "decide sent -> TOOL_CALL_RESULT": []} for side in info}
    order = list(info)

    def turns(n, warm):  # each side in turn, the first side alternating; the first `warm` rounds not kept
        for i in range(n + warm):
            for side in (order if i % 2 else order[::-1]):
                yield i >= warm, side

    for kept, side in turns(posts, 5):
        t0, frames = await run.started_run(post[side], side)
        floor = await run.floor_404(conns[side], side)
        if kept:
            out[side]["POST -> RUN_STARTED"].append((frames[0][0] - t0) * 1000)
            out[side]["a 404"].append(floor)
    for kept, side in turns(resumes, 2):
        body = await run.resume_body(post[side], side)
        t0 = time.perf_counter()
        hit = await run.resume_result(post[side], body, side)
        if kept:
            out[side]["resume -> TOOL_CALL_RESULT"].append((hit - t0) * 1000)
    paused = {side: iter(await run.paused_runs(clients[side], decisions + 2)) for side in info}
    for kept, side in turns(decisions, 2):
        t0, t1, t2 = await run.timed_decision(clients[side], next(paused[side])[0])
        if kept:
            out[side]["decide API"].append((t1 - t0) * 1000)
            out[side]["decide sent -> TOOL_CALL_RESULT"].append((t2 - t0) * 1000)
    for conn in [*conns.values(), *(c for client in clients.values() for c in (client.raw, *client.idle))]:
        await conn.close()
    for client in clients.values():
        await client.http.aclose()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new", nargs="?", default=str(HERE.parent))
    if "--serve" in (argv or sys.argv[1:]):  # one side's stack, in its checkout (start())
        return serve_stack()
    args = parser.parse_args(argv)
    procs, info = [], {}
    rtt = os.environ.get("AB_DB_RTT_MS")
    if rtt and os.environ.get("DATABASE_URL", "").startswith("postgres"):
        proxy = latency_proxy(os.environ["DATABASE_URL"], rtt)
    else:
        proxy = None
    try:
        for side, checkout in (("base", args.base), ("new", args.new)):
            proc, info[side] = start(checkout, side)
            procs.append(proc)
        out = asyncio.run(measure(info, int(os.environ.get("AB_POSTS", 100)), int(os.environ.get("AB_RESUMES", 40)),
                                  int(os.environ.get("AB_DECISIONS", 40))))
    finally:
        for proc in procs:
            proc.stdin.close()
        for proc in procs:
            proc.wait(60)
        if proxy is not None:
            proxy.kill()
    for figure in out["base"]:
        print(f"{figure:32s} base {q(out['base'][figure])} | new {q(out['new'][figure])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
