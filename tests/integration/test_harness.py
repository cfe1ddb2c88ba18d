"""The integration harness itself: stopping a server leaves none of its processes behind."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from tests.integration.conftest import stop


def test_stop_also_ends_what_the_process_started() -> None:
    """A parent that exits on SIGTERM and leaves its child running (as a gateway killed
    before its workers and engine core stop would) is stopped with the child."""
    parent = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    proc = subprocess.Popen([sys.executable, "-c", parent])
    deadline = time.monotonic() + 10
    children: list[psutil.Process] = []
    while not children and time.monotonic() < deadline:
        children = psutil.Process(proc.pid).children()
        time.sleep(0.05)
    assert len(children) == 1, "the child did not start"
    stop(proc, timeout=2)  # the child is given 2 s to end on its own, then killed
    assert proc.returncode is not None
    _, alive = psutil.wait_procs(children, timeout=5)
    assert not alive, "the child outlived stop()"
