"""`make bench BENCH_ARGS=--scale`: the same load on 1 web + 1 worker, then on 2 web + 2 workers.

Each layout is a fresh stack (bench/run.py's Stack: its own PostgreSQL database, one Redis, the
fake model), each web a Daphne process and each worker a Celery worker with its own pool, every
one a separate process tree. Clients are spread over the web processes round robin, as a proxy
would spread them. Measured per layout, with the same number of concurrent clients:

- runs: clients POST /agui/banking/ ("hello") over and over, each read to RUN_FINISHED: runs
  started per second, POST -> RUN_STARTED and POST -> RUN_FINISHED;
- decisions: paused transfer runs decided concurrently through the decide API of one web process
  while a WebSocket of the other watches the thread: decisions per second, decide call ->
  TOOL_CALL_RESULT on that WebSocket;
- cross-process (2 + 2): a WebSocket on web 2 watches a run started through web 1 and decided
  through web 1; it must see every event of the thread's stream (Redis) in order.

    python bench/run.py --scale [--quick] [--concurrency N]   # DATABASE_URL=postgres://...
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path


def _bench_run():
    """bench/run.py as a module (`import run` would find scripts/run.py, first on sys.path)."""
    if "bench_run" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_run", Path(__file__).with_name("run.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_run"] = module
        spec.loader.exec_module(module)
    return sys.modules["bench_run"]


_run = _bench_run()
devstack = _run.devstack
LOG_DIR, ROOT, TRANSFER, Client, Stack, log, summary = (_run.LOG_DIR, _run.ROOT, _run.TRANSFER, _run.Client,
                                                        _run.Stack, _run.log, _run.summary)
is_end, read_until, run_input, snapshots = _run.is_end, _run.read_until, _run.run_input, _run.snapshots
CpuMeter = _run.CpuMeter

RESULTS = ROOT / "bench" / "results-scale.json"
SNAPSHOT_TYPES = ("MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "CUSTOM")
FULL = dict(clients=16, runs=400, decisions=200)
QUICK = dict(clients=8, runs=80, decisions=40)


class ScaleStack(Stack):
    """bench/run.py's stack with `n` Daphne processes and `n` Celery workers."""

    def __init__(self, args, n: int):
        super().__init__(args)
        self.n = n
        self.urls: list[str] = []

    def start_servers(self) -> None:
        commands = dict(devstack.stack_commands("127.0.0.1", "0", str(self.tmp / "beat"), pool=self.args.pool,
                                                concurrency=str(self.args.concurrency)))
        for i in range(1, self.n + 1):
            worker = [*commands["worker"], "-n", f"bench{i}@%h"]  # distinct node names: both answer pings
            self.children.append(devstack.spawn(f"worker{i}", worker, env=self.env,
                                                log_path=LOG_DIR / f"scale{self.n}-worker{i}.log"))
            port = devstack.free_port()
            web = [*commands["web"], "--verbosity", "0"]
            web[web.index("-p") + 1] = str(port)
            self.children.append(devstack.spawn(f"web{i}", web, env=self.env,
                                                log_path=LOG_DIR / f"scale{self.n}-web{i}.log"))
            self.urls.append(f"http://127.0.0.1:{port}")
        self.url = self.urls[0]
        log(f"waiting for /healthz on {self.n} web processes and {self.n} workers")
        for url in self.urls:
            devstack.wait_healthy(url, self.children, timeout=120)
        self.wait_workers()

    def wait_workers(self, timeout=60) -> None:
        """Every worker answers a ping (/healthz stops at the first reply)."""
        names = {f"bench{i}@" for i in range(1, self.n + 1)}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run([sys.executable, "-m", "celery", "-A", "agui_project", "inspect", "ping", "-j",
                                  "-t", "2"], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
            if all(name in out.stdout for name in names):
                return
        raise RuntimeError(f"not every worker answered a ping: {out.stdout[-500:]} {out.stderr[-500:]}")

    def pid(self, name: str) -> int:  # bench/run.py's machine description asks for "worker"
        return super().pid({"worker": "worker1", "web": "web1"}.get(name, name))


async def clients_for(stack: ScaleStack) -> list[Client]:
    """One client per web process; the tokens and the (database) sessions are valid on all."""
    clients = [Client(stack, url) for url in stack.urls]
    await clients[0].setup()
    for c in clients[1:]:
        c.tokens, c.sessions = clients[0].tokens, clients[0].sessions
    return clients


async def load_runs(clients: list[Client], cfg) -> dict:
    """`clients` concurrent AG-UI clients, client i on web i mod n, each run read to its end."""
    todo = list(range(cfg["runs"]))
    firsts, wholes = [], []

    async def client(i):
        c = clients[i % len(clients)]
        while todo:
            todo.pop()
            t0 = time.perf_counter()
            first = None
            async for now, _wall, event in c.sse("banking", run_input(f"bench-scale-{uuid.uuid4()}", "hello")):
                first = first or now
                if is_end(event) and event["type"] != "RUN_FINISHED":
                    raise RuntimeError(f"run ended with {event}")
            firsts.append((first - t0) * 1000)
            wholes.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(cfg["clients"])))
    elapsed = time.perf_counter() - t0
    return {"runs": len(wholes), "seconds": round(elapsed, 2), "runs_per_s": round(len(wholes) / elapsed, 1),
            "first_event_ms": summary(firsts, 1), "whole_run_ms": summary(wholes, 1)}


async def pause_transfers(clients: list[Client], n: int, concurrency: int) -> list[tuple[str, str]]:
    sem = asyncio.Semaphore(concurrency)

    async def one(i):
        c = clients[i % len(clients)]
        async with sem:
            thread_id = await c.new_thread()
            run_id = await c.post_message(thread_id, TRANSFER)
            run = await c.wait_run(run_id)
            if run["status"] != "interrupted":
                raise RuntimeError(f"run {run_id} ended {run['status']}: {run.get('error')}")
            return thread_id, run_id

    return await asyncio.gather(*(one(i) for i in range(n)))


def cpu_split(used: dict, units: int) -> dict:
    """CPU ms per unit: all web processes, all workers."""
    web = sum(v for k, v in used.items() if k.startswith("web"))
    worker = sum(v for k, v in used.items() if k.startswith("worker"))
    return {"web": round(web * 1000 / units, 2), "worker": round(worker * 1000 / units, 2)} if units else {}


async def load_decisions(clients: list[Client], cfg, meter) -> dict:
    """Paused transfers decided `clients` at a time: decide through web k, watch on web k+1."""
    log(f"scale: pausing {cfg['decisions']} transfer runs")
    paused = await pause_transfers(clients, cfg["decisions"], cfg["clients"])
    todo = list(enumerate(paused))
    latency = []

    async def client(k):
        while todo:
            i, (thread_id, _run_id) = todo.pop()
            decider, watcher = clients[i % len(clients)], clients[(i + 1) % len(clients)]
            pending = await decider.api("GET", f"/api/approvals/?thread={thread_id}&status=pending", "finn")
            approval_id = pending["results"][0]["id"]
            async with watcher.ws(thread_id) as sock:
                await snapshots(sock)
                reader = asyncio.create_task(read_until(sock, lambda e: e.get("type") == "TOOL_CALL_RESULT", 60))
                await asyncio.sleep(0)
                t0 = time.perf_counter()
                await decider.api("POST", f"/api/approvals/{approval_id}/decide/", "finn", json={"decision": "approve"})
                frames = await reader
                latency.append((frames[-1][0] - t0) * 1000)
                await read_until(sock, is_end, timeout=60)

    with meter.phase() as used:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(cfg["clients"])))
        elapsed = time.perf_counter() - t0
    return {"decisions": len(latency), "seconds": round(elapsed, 2),
            "decisions_per_s": round(len(latency) / elapsed, 1), "decide_to_result_ms": summary(latency, 1),
            "cpu_ms_per_decision": cpu_split(used, len(latency))}


async def cross_process(stack: ScaleStack, clients: list[Client]) -> dict:
    """A WebSocket on web 2 sees every event of a run started and decided through web 1."""
    import redis

    web1, web2 = clients[0], clients[-1]
    thread_id = await web1.new_thread()
    async with web2.ws(thread_id) as sock:
        await snapshots(sock)
        run_id = await web1.post_message(thread_id, TRANSFER)
        seen = await read_until(sock, is_end, timeout=60)  # the run pauses: RUN_FINISHED, interrupt
        pending = await web1.api("GET", f"/api/approvals/?thread={thread_id}&status=pending", "finn")
        await web1.api("POST", f"/api/approvals/{pending['results'][0]['id']}/decide/", "finn",
                       json={"decision": "approve"})
        seen += await read_until(sock, is_end, timeout=60)  # the continuation to its end
    stream = [json.loads(f[b"e"]) for _id, f in
              redis.Redis.from_url(stack.env["REDIS_URL"]).xrange(f"agui:thread:{thread_id}")]
    ends = [i for i, e in enumerate(stream) if is_end(e)]
    stream = stream[:ends[-1] + 1] if ends else stream  # up to the continuation's end, as the socket read
    got = [e for _p, _w, e in seen]
    # what the socket got before the run's events: the rest of its snapshot (CUSTOM message_info, ...)
    lead = got[:len(got) - len(stream)]
    ok = got[len(lead):] == stream and all(e["type"] in SNAPSHOT_TYPES for e in lead)
    return {"run": run_id, "web_processes": [web1.url, web2.url], "stream_events": len(stream),
            "received_events": len(got) - len(lead), "every_event_in_order": ok,
            "types": [e["type"] + (f" {e['name']}" if e.get("name") else "") for e in got]}


async def measure(stack: ScaleStack, cfg) -> dict:
    """Each load with the CPU it cost all web and worker processes (not the model, not the
    clients): if a run costs the same CPU in both layouts, processes on machines of their own add
    their throughput, whatever one shared machine shows."""
    clients = await clients_for(stack)
    meter = CpuMeter({c.name: c.proc.pid for c in stack.children if c.name.startswith(("web", "worker"))})
    try:
        for c in clients:  # warm every process: imports, connections, first runs
            for _ in range(2):
                await c.wait_run(await c.post_message(await c.new_thread(), "hello"))
        out = {}
        with meter.phase() as used:
            out["runs"] = await load_runs(clients, cfg)
        out["runs"]["cpu_ms_per_run"] = cpu_split(used, out["runs"]["runs"])
        out["decisions"] = await load_decisions(clients, cfg, meter)
        if stack.n > 1:
            out["cross_process"] = await cross_process(stack, clients)
        return out
    finally:
        for c in clients:
            await c.close()


def _cpu(fig: dict) -> str:
    return f"{fig.get('web')} + {fig.get('worker')} ms"


def table(results: dict) -> str:
    m = results["machine"]
    lines = [f"Machine: {m['nproc']} × {m['cpu']}, {m['ram_gib']} GiB RAM; {m['db']}; Redis {m['redis']}"
             f"{' (embedded)' if m['embedded_redis'] else ''}; each worker {m['worker']}; Python {m['python']}; "
             f"{results['config']['clients']} concurrent clients; load average {results['load_before']} before, "
             f"{results['load_after']} after{' (--quick)' if results['quick'] else ''}.", "",
             "| layout | runs started /s | POST → RUN_STARTED p50 / p95 | POST → RUN_FINISHED p50 / p95 | "
             "CPU per run (web, workers) | decisions /s | decide → TOOL_CALL_RESULT (other web's WebSocket) "
             "p50 / p95 | CPU per decision (web, workers) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results["layouts"].items():
        runs, dec = r["runs"], r["decisions"]
        lines.append(f"| {name} | {runs['runs_per_s']} | {runs['first_event_ms']['p50']} / "
                     f"{runs['first_event_ms']['p95']} ms | {runs['whole_run_ms']['p50']} / "
                     f"{runs['whole_run_ms']['p95']} ms | {_cpu(runs['cpu_ms_per_run'])} | {dec['decisions_per_s']} | "
                     f"{dec['decide_to_result_ms']['p50']} / {dec['decide_to_result_ms']['p95']} ms | "
                     f"{_cpu(dec['cpu_ms_per_decision'])} |")
    for name, r in results["layouts"].items():
        x = r.get("cross_process")
        if x:
            lines.append(f"\nCross-process ({name}): a WebSocket on web 2 got {x['received_events']} of the "
                         f"{x['stream_events']} events of a run started and decided through web 1, "
                         f"{'every one in order' if x['every_event_in_order'] else '**not all, or out of order**'}.")
    return "\n".join(lines)


def main(args) -> int:
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        print("--scale measures on PostgreSQL: set DATABASE_URL=postgres://user@host:5432/name "
              "(a fresh <name>_bench database is made beside it for each layout)")
        return 2
    cfg = QUICK if args.quick else FULL
    args.peer = False  # the peer is one process: nothing of it to scale
    started, load_before = time.perf_counter(), os.getloadavg()
    layouts, machine = {}, {}
    for n in (1, 2):
        stack = ScaleStack(args, n)
        name = f"{n} web + {n} worker{'s' if n > 1 else ''}"
        try:
            log(f"scale: {name}")
            stack.start()
            machine = stack.machine
            layouts[name] = asyncio.run(measure(stack, cfg))
            log(f"scale: {name}: {layouts[name]['runs']['runs_per_s']} runs/s, "
                f"{layouts[name]['decisions']['decisions_per_s']} decisions/s")
        except BaseException:
            for child in stack.children:
                if child.log_path:
                    print(f"----- {child.name} (last lines) -----\n{child.tail(30)}")
            raise
        finally:
            stack.stop()
    results = {"quick": args.quick, "config": cfg, "machine": machine, "layouts": layouts,
               "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
               "seconds": round(time.perf_counter() - started, 1), "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    RESULTS.write_text(json.dumps(results, indent=2))
    print()
    print(table(results))
    print(f"\n{RESULTS.relative_to(ROOT)} written; {results['seconds']} s in all.")
    cross = [r["cross_process"]["every_event_in_order"] for r in layouts.values() if "cross_process" in r]
    return 0 if all(cross) else 1

