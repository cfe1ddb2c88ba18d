"""app.parent_watch with real processes: a parent that starts a sibling and a watcher, then
is killed outright; the watcher ends the sibling, then itself."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from app.parent_watch import siblings, stop_processes

ROOT = Path(__file__).resolve().parents[2]

WATCHER = """
import os, sys
from pathlib import Path
import app.parent_watch
from app.parent_watch import watch_parent

app.parent_watch.REFRESH_S = 0.1

def orphaned():
    Path(sys.argv[1]).write_text("orphaned")
    os._exit(0)

thread = watch_parent(int(sys.argv[2]), poll_s=0.05, on_orphaned=orphaned)
print(flush=True)  # watching
thread.join()
"""

PARENT = """
import os, subprocess, sys, time
sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
watcher = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1], sys.argv[2], str(os.getpid())], stdout=subprocess.PIPE
)
watcher.stdout.readline()
later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(sibling.pid, watcher.pid, later.pid, flush=True)
time.sleep(120)
"""


def test_a_watcher_ends_its_sibling_and_itself_when_the_parent_is_killed(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "marker"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, WATCHER, str(marker)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert parent.stdout is not None
    family = [psutil.Process(int(pid)) for pid in parent.stdout.readline().split()]
    try:
        # the watcher noted its sibling, and the one started after it at its next look
        time.sleep(0.5)
        assert all(p.is_running() for p in family) and not marker.exists()
        parent.kill()
        parent.wait(10)
        # gone, or a zombie its new parent has not reaped yet
        _, alive = psutil.wait_procs(family, timeout=30)
        assert all(_status(p) == psutil.STATUS_ZOMBIE for p in alive)
        assert marker.read_text() == "orphaned"
    finally:
        for proc in family:
            with contextlib.suppress(psutil.Error):
                proc.kill()


def _status(proc: psutil.Process) -> str:
    try:
        return str(proc.status())
    except psutil.NoSuchProcess:
        return str(psutil.STATUS_ZOMBIE)  # gone meanwhile


IGNORES_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print(flush=True); time.sleep(60)"
)


def test_siblings_and_stopping_them() -> None:
    sleepers = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
        subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE),
    ]
    assert sleepers[1].stdout is not None
    sleepers[1].stdout.readline()  # its handler is set
    # this test process is their parent: seen from one of them, the other is a sibling
    assert {p.pid for p in siblings(os.getpid())} >= {s.pid for s in sleepers}
    procs = [psutil.Process(s.pid) for s in sleepers]
    stop_processes(procs, wait_s=1.0)
    assert procs[0].returncode == -15  # reaped by psutil, which kept its status
    assert sleepers[1].wait(10) == -9  # outlived the wait: killed
    assert siblings(2**22 + 12345) == []  # no such parent


def test_a_worker_that_starts_after_its_parent_is_gone_stops_at_once() -> None:
    import threading

    from app.parent_watch import watch_parent

    orphaned = threading.Event()
    gone = 2**22 + 12345  # not this process's parent: as if it had died before the watch
    watch_parent(gone, poll_s=0.01, on_orphaned=orphaned.set).join(10)
    assert orphaned.is_set()


GRANDPARENT = """
import os, subprocess, sys, time
middle = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3], str(os.getpid())],
    stdout=subprocess.PIPE,
)
print(middle.pid, middle.stdout.readline().decode().strip(), flush=True)
time.sleep(120)
"""

MIDDLE = """
import subprocess, sys, time
watcher = subprocess.Popen([sys.executable, "-c", *sys.argv[1:]], stdout=subprocess.PIPE)
watcher.stdout.readline()
print(watcher.pid, flush=True)
time.sleep(120)
"""


def test_a_grandchild_watches_its_grandparent(tmp_path: Path) -> None:
    """A worker forked by a fork server has the gateway as its parent's parent: it keeps
    serving while the gateway lives; once the gateway is killed it stops the gateway's
    children (the fork server among them) and then itself."""
    marker = tmp_path / "marker"
    grandparent = subprocess.Popen(
        [sys.executable, "-c", GRANDPARENT, MIDDLE, WATCHER, str(marker)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert grandparent.stdout is not None
    middle, watcher = (psutil.Process(int(pid)) for pid in grandparent.stdout.readline().split())
    try:
        assert watcher.ppid() == middle.pid and middle.ppid() == grandparent.pid
        time.sleep(0.5)
        assert watcher.is_running() and not marker.exists()
        grandparent.kill()
        grandparent.wait(10)
        wait_until = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < wait_until:
            time.sleep(0.05)
        assert marker.read_text() == "orphaned"
        _, alive = psutil.wait_procs([middle], timeout=30)
        assert all(_status(p) == psutil.STATUS_ZOMBIE for p in alive)
    finally:
        for proc in (middle, watcher):
            with contextlib.suppress(psutil.Error):
                proc.kill()
