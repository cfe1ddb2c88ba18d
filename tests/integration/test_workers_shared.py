"""`--api-server-count 2` with what the workers share: one admission count (`--max-pending-
requests`), the connections they take in turn (`--connections-per-worker`), and the engine
core whose death stops them all. One real gateway, ended by the last test; its workers are
spawned (`--worker-start spawn`), as vllm serve's are.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from bench.connection_split import http_workers, owners
from tests.integration.conftest import LiveGateway, server_env, start_gateway, stop
from tests.integration.live_helpers import (
    HI,
    StreamReader,
    descendants,
    metric,
    named,
    wait_for,
)


@pytest.fixture(scope="module")
def doomed(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, test_home: Path
) -> Iterator[tuple[subprocess.Popen[bytes], LiveGateway]]:
    tmp = tmp_path_factory.mktemp("doomed")
    proc, live = start_gateway(
        tmp,
        tiny_model_dir,
        test_home,
        [
            "--api-server-count",
            "2",
            "--max-pending-requests",
            "2",
            "--connections-per-worker",
            "2",
            "--worker-start",
            "spawn",
        ],
        server_env(test_home),
    )
    try:
        yield proc, live
    finally:
        stop(proc)  # normally test_engine_death_stops_every_worker_with_status_3 ended it


def test_connections_fill_the_first_worker_first(doomed) -> None:  # type: ignore[no-untyped-def]
    """`--connections-per-worker 2`: worker 0 takes the first two connections that stay
    open, worker 1 the next two (the kernel alone spreads them over both)."""
    proc, live = doomed
    # /health answers once one worker serves; the gate passes over a worker still starting
    wait_for(lambda: live.log.read_text().count("takes connections in turn") == 2, 120)
    workers = http_workers(proc.pid)
    assert set(workers) == {0, 1}
    # `--worker-start spawn`: the gateway started each worker itself, no fork server
    assert [p.ppid() for p in named(descendants(proc), "APIServer")] == [proc.pid] * 2
    assert not named(descendants(proc), "multiprocessing.forkserver")
    log = live.log.read_text(errors="replace")  # so each worker loaded its own tokenizer
    assert log.count("tokenizer=the engine's first_tokens") == 2
    port = int(live.base_url.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    order: list[int | None] = []
    try:
        for _ in range(4):
            conn = socket.create_connection(("127.0.0.1", port), timeout=30)
            held.append(conn)
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")  # kept open: keep-alive
            client = conn.getsockname()[1]
            order.append(owners(workers, {client}).get(client))
    finally:
        for conn in held:
            conn.close()
    assert order == [0, 0, 1, 1]


def test_workers_share_one_admission_limit(doomed) -> None:  # type: ignore[no-untyped-def]
    """`--max-pending-requests 2` bounds the gateway, not each worker: counted per worker,
    two workers let in 4 of 6 long requests (four workers on the H200 reported a limit of
    8). Each request on its own connection, so both workers take some."""
    _, live = doomed
    assert metric(live, "gateway_max_pending_requests") == 2
    body = {"messages": HI, "max_tokens": 1000, "ignore_eos": True}

    async def burst() -> list[int]:
        async def one() -> int:
            async with httpx.AsyncClient(timeout=120) as client:
                r = await client.post(live.v1 + "/chat/completions", json=body)
                return r.status_code

        return await asyncio.gather(*(one() for _ in range(6)))

    statuses = asyncio.run(burst())
    assert sorted(statuses) == [200, 200, 503, 503, 503, 503], statuses
    assert metric(live, "gateway_pending_requests") == 0


def test_engine_death_stops_every_worker_with_status_3(doomed) -> None:  # type: ignore[no-untyped-def]
    """The workers' engine clients can't see the engine core process; the launcher can:
    it stops every worker, the worker asks the engine, finds it gone and ends its
    streams with an error frame, and the gateway exits 3 for its supervisor."""
    proc, live = doomed
    assert httpx.get(live.base_url + "/health").json() == {"status": "healthy"}
    family = descendants(proc)
    cores = named(family, "EngineCore")
    assert len(cores) == 1
    reader = StreamReader(live, 1900)
    frames = reader.frames
    wait_for(lambda: len(frames) >= 1, 30)
    cores[0].kill()
    assert proc.wait(timeout=60) == 3
    reader.join(timeout=30)
    assert frames[-1] == "[DONE]", frames[-3:]
    assert "error" in json.loads(frames[-2])  # ended with an error frame, not cut
    _, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, f"left behind: {[p.pid for p in alive]}"
    with pytest.raises(httpx.HTTPError):
        httpx.get(live.base_url + "/health", timeout=2)
