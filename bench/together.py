"""`bench.run --together`: every server up at once, their runs taking turns seconds apart.

One server at a time, sessions minutes apart, measured the H200 lease's drift as much as
the servers: in session 23 `vllm serve` (Rust frontend) made 92.1 and then 107.6 req/s at
1024x128@64 in two sessions of one call, the gateway 95.9 and 84.2 in another. Here each
server starts once, all of them at the same time, then every round runs each server's
plan in `session_order` (A B, B A, ...), so a round's two runs are seconds apart and drift
falls on both. The idle server waits on its sockets meanwhile.

Started one after another, the servers' starts took 148 s each on a cold H200 in session
25, and 66-107 s warm: a third of a 565 s device call before the first run. Started
together, a GPU engine must not size its KV cache by profiling (which counts the memory
that another engine takes meanwhile as its own), so each gets a fixed KV cache
(`--kv-cache-memory-bytes`, an equal part of `SHARED_KV_GIB`) besides its share of the
memory for vLLM's start-up check (`--gpu-memory-utilization`, as in `bench.paired`).
`--start-apart` starts them one after another, as before.
One client process runs every round (`PlanRunner.run_plans`): it imports vLLM once, not
once per server and round (17-25 s each on the H200's host in session 24); it skips what
would start after the deadline, and the runs of a server that died.
"""

from __future__ import annotations

from typing import Any, Protocol

from bench.commands import MEMORY_FLAG, memory_share
from bench.profiles import session_order
from bench.servers import ServerProcess

PLAN_LEAST_S = 30.0  # a client imports vLLM (5-40 s) before its first run: less is not tried

SHARED_KV_GIB = 96.0
"""KV cache for all engines up together on a GPU, split evenly: for two, 48 GiB each, 449k
tokens of Qwen3-0.6B's shape (112 KiB a token), where concurrency 256 at 1024x128 or
128x1024 needs 295k; with weights, activations and CUDA graphs (about 4 GiB an engine)
that is 104 of the H200's 140 GiB. Sized by profiling, one after another, 0.4 of the
memory gave each 54.2 GiB."""
ENGINE_ROOM_GIB = 8.5
"""What to leave an engine beside its KV cache on a smaller GPU: twice the 4 GiB it takes,
and the driver's part. Session 46's H100 (80 GB, 79.6 GiB by nvidia-smi) could not hold
two 48 GiB caches, and the second engine died at start-up for want of memory; two of
31 GiB ran there."""
KV_FLAG = "--kv-cache-memory-bytes"


def kv_cache_bytes(servers: int, device_gib: float | None = None) -> int:
    """Each engine's KV cache: an equal part of `SHARED_KV_GIB`, or of what a GPU of
    `device_gib` holds beside `ENGINE_ROOM_GIB` an engine, where that is less."""
    n = max(servers, 1)
    shared = SHARED_KV_GIB
    if device_gib is not None:
        shared = min(shared, device_gib - ENGINE_ROOM_GIB * n)
    return int(max(shared, 1.0) / n * 2**30)


def memory_flags(
    profile: str, servers: int, flags: list[str], device_gib: float | None = None
) -> list[str]:
    """`bench.commands.memory_share`'s flags for one of `servers` engines up together,
    and on a GPU (of `device_gib`, where known) a fixed KV cache (`kv_cache_bytes`); none
    where the server's own flags already set its memory."""
    if any(f.startswith((MEMORY_FLAG, KV_FLAG)) for f in flags):
        return []
    share = memory_share(profile, servers)
    if share and profile == "gpu":
        share += [KV_FLAG, str(kv_cache_bytes(servers, device_gib))]
    return share


class SessionRunner(Protocol):
    """What run_together needs of bench.run's Runner."""

    args: Any
    profile: Any
    servers: list[str]
    data: dict[str, Any]

    def remaining(self) -> float: ...

    def log(self, msg: str) -> None: ...

    def skip(self, tag: str, why: str) -> None: ...

    def launch_session(
        self, name: str, rnd: int, model: str, port: int
    ) -> tuple[ServerProcess, dict[str, Any]]: ...

    def settle_session(self, server: ServerProcess, record: dict[str, Any], model: str) -> None: ...

    def close_session(
        self, server: ServerProcess, record: dict[str, Any], wait_gpu: bool = True
    ) -> None: ...

    def run_plans(self, entries: list[tuple[ServerProcess, str, int]], model: str) -> None: ...

    def load_probes(self, server: ServerProcess, record: dict[str, Any], model: str) -> None: ...


def run_together(runner: SessionRunner, model: str) -> None:
    """Start every server (ports 10 apart; all at once unless `--start-apart`), wait for
    each, run the rounds against those that came up, then the first-text load probes
    (`first_text_load`) of each in turn, then stop them all; skipped sessions
    and runs are listed as bench.run lists them."""
    opened: list[tuple[ServerProcess, dict[str, Any]]] = []
    try:
        _start_all(runner, model, opened)
        up = {record["server"]: server for server, record in opened if "error" not in record}
        entries = [
            (up[name], name, rnd)
            for rnd in range(1, runner.profile.rounds + 1)
            for name in session_order(list(up), rnd)
        ]
        if entries and runner.remaining() < PLAN_LEAST_S:
            for _, name, rnd in entries:
                runner.skip(f"{name}#{rnd}", f"deadline: skipping {name} round {rnd}")
        elif entries:
            runner.run_plans(entries, model)
            for server, record in opened:  # each in turn, the others idle
                if "error" not in record:
                    runner.load_probes(server, record, model)
    finally:
        for i, (server, record) in enumerate(opened):
            runner.close_session(server, record, wait_gpu=i == len(opened) - 1)


def _start_all(
    runner: SessionRunner, model: str, opened: list[tuple[ServerProcess, dict[str, Any]]]
) -> None:
    """Launch and settle the servers into `opened`. Started at the same time, one that did
    not come up is started once more on its own, once the others are up, as `--start-apart`
    would have (time allowing; its failed session stays in the results). The others keep
    running: a start that failed for want of memory beside them fails again (session 46's
    48 GiB KV caches on an H100)."""
    args = runner.args
    apart = bool(getattr(args, "start_apart", False))
    estimate = args.session_estimate_s or 0
    ports: list[int] = []
    for n, name in enumerate(runner.servers):
        if runner.remaining() < estimate:
            runner.skip(f"{name}#1", f"deadline: not starting {name}")
            continue
        ports.append(args.port + 10 * n)
        opened.append(runner.launch_session(name, 1, model, ports[-1]))
        if apart:
            runner.settle_session(*opened[-1], model)
    if apart:
        return
    for server, record in opened:
        runner.settle_session(server, record, model)
    for i, (server, record) in enumerate(opened):
        if "error" in record and runner.remaining() >= estimate:
            name = record["server"]
            runner.log(f"{name} did not come up beside the others: starting it again, on its own")
            # not waiting for the GPU's memory: the others keep theirs (the check waits for
            # an idle GPU); the stopped engine's is free long before the new one asks
            runner.close_session(server, record, wait_gpu=False)
            opened[i] = runner.launch_session(name, 1, model, ports[i])
            runner.settle_session(*opened[i], model)
