"""A TCP proxy that adds a fixed delay to every round trip: PostgreSQL as if across a network.

    python bench/latency_proxy.py --listen 0 --to 127.0.0.1:5432 --rtt-ms 0.5

Prints "ready PORT" once it listens. Each chunk read from one side is written to the other
`rtt/2` after it arrived, in order, so a request and its answer take `rtt` more than they would.
Threads and blocking sockets, not asyncio: asyncio's timers wait in whole milliseconds on epoll,
too coarse for a delay of a fraction of one. On this machine loopback round trips to PostgreSQL
take ~0.05-0.1 ms; a database on another host of the same network, as the several-process
deployment has it (README "Running several processes"), ~0.2-1 ms: bench/ab.py uses this
(AB_DB_RTT_MS) to show what the number of round trips costs there.
"""

import argparse
import collections
import socket
import sys
import threading
import time


def pump(src, dst, delay):
    """Read from `src`, write to `dst` `delay` seconds after each chunk arrived, in order."""
    queue, ready = collections.deque(), threading.Condition()

    def writer():
        while True:
            with ready:
                while not queue:
                    ready.wait()
                due, data = queue.popleft()
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if data is None:
                dst.shutdown(socket.SHUT_WR)
                return
            dst.sendall(data)

    threading.Thread(target=writer, daemon=True).start()
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        with ready:
            queue.append((time.perf_counter() + delay, data or None))
            ready.notify()
        if not data:
            return


def serve(listen_port, target, rtt):
    server = socket.create_server(("127.0.0.1", listen_port))
    print(f"ready {server.getsockname()[1]}", flush=True)
    while True:
        client, _ = server.accept()
        upstream = socket.create_connection(target)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(src, dst, rtt / 2), daemon=True).start()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=int, default=0)
    parser.add_argument("--to", default="127.0.0.1:5432")
    parser.add_argument("--rtt-ms", type=float, default=0.5)
    args = parser.parse_args(argv)
    host, port = args.to.rsplit(":", 1)
    serve(args.listen, (host, int(port)), args.rtt_ms / 1000)


if __name__ == "__main__":
    sys.exit(main())
