"""CPU time of process trees over a measured phase, for the bench's µs per token / per decision.

    meter = CpuMeter({"worker": pid, "web": pid})
    with meter.phase() as used:   # used: {name: CPU seconds} once the block is left
        ...

A tree is a process and its children (a prefork worker's pool). On Linux the time on CPU of
each of their threads comes from /proc/<pid>/task/<tid>/schedstat (nanoseconds: a resume costs
a few ms, below the 10 ms tick of user + system times), and that of threads that have ended from
the process's user + system time; elsewhere psutil's user + system time.
Children that start and exit inside the phase are missed (none do in the bench: the pool's
processes live as long as the worker).
"""

from __future__ import annotations

import os
from contextlib import contextmanager, suppress
from pathlib import Path


def _ticks(stat_text: str) -> int:
    """utime + stime, in clock ticks, from a /proc .../stat line (fields 14 and 15)."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _schedstat_seconds(pid: int) -> float | None:
    """The process's CPU: its live threads' from schedstat (nanoseconds), plus that of the threads
    that have ended, which only the process's own utime + stime still hold (clock ticks). Without
    the latter, a thread that ends inside a phase takes its CPU out of the phase's total (Django
    under Daphne used to end a thread after every request)."""
    total, live_ticks = 0, 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with suppress(OSError, ValueError, IndexError):
                ns = int((task / "schedstat").read_text().split()[0])
                ticks = _ticks((task / "stat").read_text())
                total, live_ticks = total + ns, live_ticks + ticks
        ended_ticks = max(0, _ticks(Path(f"/proc/{pid}/stat").read_text()) - live_ticks)
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9 + ended_ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int, children: bool = True) -> float:
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)] if children else [root]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for p in procs:
        precise = _schedstat_seconds(p.pid)
        if precise is not None:
            total += precise
            continue
        with suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system
    return total


class CpuMeter:
    def __init__(self, pids: dict[str, int], alone: tuple[str, ...] = ()):
        """`alone`: names whose process is counted without its children (the bench's own process,
        whose children are the stack it measures)."""
        self.pids, self.alone = pids, alone

    def read(self) -> dict[str, float]:
        return {name: tree_cpu_seconds(pid, children=name not in self.alone) for name, pid in self.pids.items()}

    @contextmanager
    def phase(self):
        used: dict[str, float] = {}
        before = self.read()
        try:
            yield used
        finally:
            after = self.read()
            used.update({name: after[name] - before[name] for name in self.pids})


def per_unit_us(used: dict[str, float], units: int) -> dict[str, float | None]:
    """CPU µs per unit (token, decision) for each tree."""
    return {name: (round(seconds * 1e6 / units, 1) if units else None) for name, seconds in used.items()}
