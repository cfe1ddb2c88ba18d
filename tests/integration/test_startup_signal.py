"""A SIGTERM while the engine is still starting stops the gateway at once (real engine)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil

from tests.integration.conftest import launch_gateway, server_env
from tests.integration.live_helpers import engine_cores, wait_for


def test_sigterm_during_start_up_stops_at_once(
    tmp_path: Path, tiny_model_dir: Path, test_home: Path
) -> None:
    """The engine loads inside the lifespan and holds the event loop; a SIGTERM then must
    stop the gateway and its engine at once, not once start-up has finished."""
    proc, live = launch_gateway(tmp_path, tiny_model_dir, test_home, [], server_env(test_home))
    try:
        wait_for(lambda: bool(engine_cores(proc.pid)), 120)  # start-up under way
        cores = engine_cores(proc.pid)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    log = live.log.read_text(errors="replace")
    print(f"\nSIGTERM during start-up: exited {code} after {took:.1f}s")
    assert "SIGTERM during start-up: stopping" in log
    assert code == 128 + signal.SIGTERM  # not 0 after a finished start-up
    assert "engine ready" not in log
    _, alive = psutil.wait_procs(cores, timeout=30)
    assert not alive, "engine core left running"
