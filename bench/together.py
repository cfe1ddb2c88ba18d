"""`bench.run --together`: every server up at once, their runs taking turns seconds apart.

One server at a time, sessions minutes apart, measured the H200 lease's drift as much as
the servers: in session 23 `vllm serve` (Rust frontend) made 92.1 and then 107.6 req/s at
1024x128@64 in two sessions of one call, the gateway 95.9 and 84.2 in another. Here each
server starts once (one after another: each engine sizes its memory on what the earlier
ones left, so on a GPU each gets an equal share, `--gpu-memory-utilization`, as in
`bench.paired`), then every
round runs each server's plan in `session_order` (A B, B A, ...), so a round's two runs are
seconds apart and drift falls on both. The idle server waits on its sockets meanwhile.
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


def memory_flags(profile: str, servers: int, flags: list[str]) -> list[str]:
    """`bench.commands.memory_share`'s flags for one of `servers` engines up together;
    none where the server's own flags already set its memory."""
    if any(f.startswith(MEMORY_FLAG) for f in flags):
        return []
    return memory_share(profile, servers)


class SessionRunner(Protocol):
    """What run_together needs of bench.run's Runner."""

    args: Any
    profile: Any
    servers: list[str]
    data: dict[str, Any]

    def remaining(self) -> float: ...

    def log(self, msg: str) -> None: ...

    def skip(self, tag: str, why: str) -> None: ...

    def open_session(
        self, name: str, rnd: int, model: str, port: int
    ) -> tuple[ServerProcess, dict[str, Any]]: ...

    def close_session(
        self, server: ServerProcess, record: dict[str, Any], wait_gpu: bool = True
    ) -> None: ...

    def run_plans(self, entries: list[tuple[ServerProcess, str, int]], model: str) -> None: ...


def run_together(runner: SessionRunner, model: str) -> None:
    """Start every server (ports 10 apart), run the rounds against those that came up,
    then stop them all; skipped sessions and runs are listed as bench.run lists them."""
    args = runner.args
    opened: list[tuple[ServerProcess, dict[str, Any]]] = []
    up: dict[str, ServerProcess] = {}
    try:
        for n, name in enumerate(runner.servers):
            if runner.remaining() < (args.session_estimate_s or 0):
                runner.skip(f"{name}#1", f"deadline: not starting {name}")
                continue
            server, record = runner.open_session(name, 1, model, args.port + 10 * n)
            opened.append((server, record))
            if "error" not in record:
                up[name] = server
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
    finally:
        for i, (server, record) in enumerate(opened):
            runner.close_session(server, record, wait_gpu=i == len(opened) - 1)
