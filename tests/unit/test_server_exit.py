"""`serve_app`'s exit status on SIGINT, with real uvicorn and real signals (no engine: the
status does not depend on one): 130 whether the process started with SIGINT at its default
(Ctrl-C in a terminal) or ignored (started with `&` by a non-interactive shell, which is
how a background CI run once got 0)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]

SERVER = """
import sys
from fastapi import FastAPI
from app.lifecycle import Lifecycle
from app.server import serve_app
from app.settings import Settings

app = FastAPI()
app.state.lifecycle = Lifecycle(max_pending=8)

@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "healthy"}

sys.exit(serve_app(app, Settings(host="127.0.0.1", port=int(sys.argv[1]))))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_sigint_exits_130(inherited: str, tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(port)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_ignore_sigint if inherited == "ignored" else None,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 128 + signal.SIGINT, log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
