"""How a burst of connections splits over a running gateway's HTTP workers:

    python -m bench.connection_split --port 8000 --pid 1234 --connections 64 --bursts 8

`vllm bench serve` opens all its connections at once; this does the same (each with a
`GET /health` answered, then held open), looks up which worker process (`APIServer_N`
among the descendants of `--pid`) holds the server side of each, closes them and goes
again. JSON on stdout: each burst's counts, largest first, and the largest shares sorted.
Run it beside a gateway started with `--api-server-count N` (with and without
`--spread-connections`); not a timed test, the split is the measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter

import psutil

from bench.procfs import worker_title


def http_workers(pid: int) -> dict[int, psutil.Process]:
    """The gateway's HTTP worker processes by index (their title says `APIServer_N`)."""
    found: dict[int, psutil.Process] = {}
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            title = worker_title(proc.cmdline())
        except psutil.Error:
            continue
        if title.startswith("APIServer_"):
            found[int(title.removeprefix("APIServer_"))] = proc
    return found


def owners(workers: dict[int, psutil.Process], client_ports: set[int]) -> dict[int, int]:
    """The index of the worker holding the server side of each client connection (by the
    client's port), one look at each worker's connections; ports no worker holds left out."""
    found: dict[int, int] = {}
    for index, worker in workers.items():
        for conn in worker.net_connections(kind="tcp"):
            if conn.raddr and conn.raddr.port in client_ports:
                found[conn.raddr.port] = index
    return found


async def burst(port: int, connections: int, workers: dict[int, psutil.Process]) -> list[int]:
    """Open `connections` at once, each with one answered request; how many each worker
    held, largest first (a worker with none counts 0)."""

    async def one() -> asyncio.StreamWriter:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n")
        if not (await reader.read(4096)).startswith(b"HTTP/1.1 200"):
            raise RuntimeError("the gateway did not answer /health with 200")
        return writer

    writers = await asyncio.gather(*(one() for _ in range(connections)))
    try:
        ports = {writer.get_extra_info("sockname")[1] for writer in writers}
        held: Counter[int] = Counter({index: 0 for index in workers})
        held.update(owners(workers, ports).values())
        return sorted(held.values(), reverse=True)
    finally:
        for writer in writers:
            writer.close()
        await asyncio.sleep(0.5)  # let the workers close their sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the gateway's main process")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--bursts", type=int, default=8)
    args = parser.parse_args(argv)
    workers = http_workers(args.pid)
    if not workers:
        parser.error(f"no APIServer_N processes under pid {args.pid}")
    splits = [asyncio.run(burst(args.port, args.connections, workers)) for _ in range(args.bursts)]
    largest = sorted(split[0] for split in splits)
    print(json.dumps({"connections": args.connections, "splits": splits, "largest": largest}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
