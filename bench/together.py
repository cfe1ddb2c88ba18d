"""`bench.run --together`: every server up at once, their runs taking turns seconds apart.

One server at a time, sessions minutes apart, measured the H200 lease's drift as much as
the servers: in session 23 `vllm serve` (Rust frontend) made 92.1 and then 107.6 req/s at
1024x128@64 in two sessions of one call, the gateway 95.9 and 84.2 in another. Here each
server starts once (one after another: each engine sizes its memory on what the earlier
ones left, so on a GPU each gets an equal share, `--gpu-memory-utilization`), then every
round runs each server's plan in `session_order` (A B, B A, ...), so a round's two runs are
seconds apart and drift falls on both. The idle server waits on its sockets meanwhile.
"""

from __future__ import annotations

from typing import Any, Protocol

from bench.profiles import session_order
from bench.servers import ServerError, ServerProcess

GPU_SHARE = 0.9  # of the GPU's memory, split evenly among the servers
PLAN_LEAST_S = 30.0  # a client imports vLLM (5-40 s) before its first run: less is not tried
MEMORY_FLAG = "--gpu-memory-utilization"


def memory_share(profile: str, servers: int, flags: list[str]) -> list[str]:
    """The flags that give each of `servers` engines an equal share of the GPU's memory;
    none on the CPU profile or where the server's own flags already set it."""
    if profile != "gpu" or any(f.startswith(MEMORY_FLAG) for f in flags):
        return []
    return [MEMORY_FLAG, f"{GPU_SHARE / max(servers, 1):.3g}"]


class SessionRunner(Protocol):
    """What run_together needs of bench.run's Runner."""

    args: Any
    profile: Any
    servers: list[str]
    data: dict[str, Any]

    def remaining(self) -> float: ...

    def log(self, msg: str) -> None: ...

    def open_session(
        self, name: str, rnd: int, model: str, port: int
    ) -> tuple[ServerProcess, dict[str, Any]]: ...

    def close_session(
        self, server: ServerProcess, record: dict[str, Any], wait_gpu: bool = True
    ) -> None: ...

    def run_plan(self, server: ServerProcess, name: str, rnd: int, model: str) -> None: ...


def run_together(runner: SessionRunner, model: str) -> None:
    """Start every server (ports 10 apart), run the rounds against those that came up,
    then stop them all; skipped sessions and runs are listed as bench.run lists them."""
    args = runner.args
    opened: list[tuple[ServerProcess, dict[str, Any]]] = []
    up: dict[str, ServerProcess] = {}
    try:
        for n, name in enumerate(runner.servers):
            if runner.remaining() < (args.session_estimate_s or 0):
                runner.log(f"deadline: not starting {name}")
                runner.data.setdefault("skipped", []).append(f"{name}#1")
                continue
            server, record = runner.open_session(name, 1, model, args.port + 10 * n)
            opened.append((server, record))
            if "error" not in record:
                up[name] = server
        for rnd in range(1, runner.profile.rounds + 1):
            for name in session_order(list(up), rnd):
                if runner.remaining() < PLAN_LEAST_S:
                    runner.log(f"deadline: skipping {name} round {rnd}")
                    runner.data.setdefault("skipped", []).append(f"{name}#{rnd}")
                    continue
                if not up[name].alive():
                    runner.log(f"{name} is no longer running: round {rnd} skipped")
                    runner.data.setdefault("skipped", []).append(f"{name}#{rnd}")
                    continue
                _one_plan(runner, up[name], name, rnd, model)
    finally:
        for i, (server, record) in enumerate(opened):
            runner.close_session(server, record, wait_gpu=i == len(opened) - 1)


def _one_plan(
    runner: SessionRunner, server: ServerProcess, name: str, rnd: int, model: str
) -> None:
    server.set_under_load(True)
    try:
        runner.run_plan(server, name, rnd, model)
    except ServerError as exc:
        runner.log(f"error: {exc}")
        runner.data.setdefault("skipped", []).append(f"{name}#{rnd}")
    finally:
        server.set_under_load(False)
