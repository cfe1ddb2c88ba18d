"""bench.connection_split: which worker holds each connection of a burst."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import psutil
import pytest

from bench.connection_split import burst, http_workers


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
    await writer.drain()
    await reader.read()  # held until the client closes
    writer.close()


@pytest.mark.asyncio
async def test_a_burst_counts_the_connections_each_worker_holds() -> None:
    """This process serves (worker 0) and a worker that holds nothing counts 0."""
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    idle = psutil.Process(psutil.Process().ppid())  # holds none of them
    try:
        assert await burst(port, 12, {0: psutil.Process(), 1: idle}) == [12, 0]
    finally:
        server.close()


def test_workers_are_found_by_their_title_among_the_descendants() -> None:
    assert http_workers(psutil.Process().pid) == {}
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "VLLM::APIServer_3"]
    )
    try:
        found = http_workers(psutil.Process().pid)
        assert list(found) == [3] and found[3].pid == child.pid
    finally:
        child.kill()
        child.wait()
