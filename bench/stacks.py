"""Summarise py-spy `--format raw` (collapsed) profiles: where the samples are.

    python bench/stacks.py var/bench-profiles/streaming-worker.txt [--top 25] [--match agents/]

Prints the functions with the most samples on the stack (inclusive) and at the top (self),
optionally only stacks containing `--match`.
"""

from __future__ import annotations

import argparse
import collections
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--match", default="")
    p.add_argument("--idle", action="store_true", help="keep idle samples (waiting in select/poll/wait)")
    a = p.parse_args(argv)
    inclusive, self_, total = collections.Counter(), collections.Counter(), 0
    for line in open(a.path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not count.isdigit() or (a.match and a.match not in stack):
            continue
        frames = stack.split(";")
        n = int(count)
        if not a.idle and any(k in frames[-1] for k in ("select (", "poll (", "wait (", "_recv_into", "accept (",
                                                        "sleep (", "epoll", "recv (", "read (selectors")):
            continue
        total += n
        for f in set(frames[2:]):
            inclusive[f] += n
        self_[frames[-1]] += n
    print(f"{total} busy samples" + (f" matching {a.match!r}" if a.match else ""))
    for title, counter in (("inclusive", inclusive), ("self", self_)):
        print(f"\n-- {title} --")
        for frame, n in counter.most_common(a.top):
            print(f"{100 * n / max(total, 1):5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
