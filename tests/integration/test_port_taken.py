"""A port another server holds fails the start at once, before the engine loads (the real
CLI on the tiny model): in one process uvicorn would only have found out after loading
it, and with several workers vLLM's SO_REUSEPORT socket would have joined the other
server's and split its connections."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import REPO, free_port, server_env


@pytest.mark.parametrize(
    ("reuse_port", "workers"),
    [(False, "1"), (True, "2")],
    ids=["plain-listener-one-process", "reuseport-listener-two-workers"],
)
def test_a_taken_port_stops_the_start_before_the_engine(
    reuse_port: bool, workers: str, tmp_path: Path, tiny_model_dir: Path, test_home: Path
) -> None:
    port = free_port()
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:  # as `vllm serve --api-server-count N` (or our workers) bind
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    other.bind(("127.0.0.1", port))
    other.listen()
    cmd = [
        sys.executable, "-m", "app", "serve", str(tiny_model_dir),
        "--host", "127.0.0.1", "--port", str(port), "--api-server-count", workers,
    ]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(
            cmd, cwd=REPO, env=server_env(test_home), capture_output=True, timeout=120
        )
    finally:
        other.close()
    took = time.monotonic() - started
    log = (done.stdout + done.stderr).decode(errors="replace")
    print(f"\nexited {done.returncode} after {took:.1f}s")
    assert done.returncode == 1, log
    assert f"cannot serve: 127.0.0.1:{port} is in use" in log
    assert "EngineCore" not in log and "engine ready" not in log  # never started
