"""`--api-server-count 2`, the parent process killed outright: nothing of it stays behind.

SIGKILL (or the OOM killer) leaves the parent no chance to stop the engine core and the
HTTP workers it started; the workers watch for that (`app.parent_watch`) and end them.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import psutil

from tests.integration.conftest import server_env, start_gateway
from tests.integration.live_helpers import engine_cores


def test_killing_the_parent_alone_ends_its_engine_and_workers(
    tmp_path: Path, tiny_model_dir: Path, test_home: Path
) -> None:
    proc, live = start_gateway(
        tmp_path, tiny_model_dir, test_home, ["--api-server-count", "2"], server_env(test_home)
    )
    family = psutil.Process(proc.pid).children(recursive=True)
    try:
        assert engine_cores(proc.pid), "no engine core among the gateway's processes"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        _, alive = psutil.wait_procs(family, timeout=90)
        assert not alive, f"left behind: {[(p.pid, p.name()) for p in alive]}"
        log = live.log.read_text(errors="replace")
        assert "the gateway's parent process" in log and "is gone" in log
    finally:
        for child in family:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(family, timeout=10)
