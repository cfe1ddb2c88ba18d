"""An HTTP worker that outlives the gateway's parent process ends the gateway's processes.

With `--api-server-count N` the parent process starts vLLM's engine core and the HTTP
workers. Stopped by a signal, it stops them; killed outright (SIGKILL, the OOM killer),
it can't, and vLLM's engine core has no watch on its parent: the engine core kept the
GPU's memory and the workers kept the port until someone found them. So each worker
notes its siblings as it starts (the engine core, started before the workers, among
them) and every `REFRESH_S` after, watches its parent, and when the parent is gone
terminates those siblings and then itself, which drains as on SIGTERM. A worker forked by
a fork server (`--worker-start forkserver`) is the parent's grandchild: it watches for the
parent among its ancestors.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable

import psutil

logger = logging.getLogger(__name__)

POLL_S = 1.0
"""How often a worker checks that its parent is still there."""

REFRESH_S = 10.0
"""How often the list of siblings is taken again (one started later is covered too)."""

STOP_WAIT_S = 10.0
"""How long a terminated sibling has to exit before it is killed."""


def siblings(parent: int) -> list[psutil.Process]:
    """The parent's other children (none when the parent can't be read)."""
    try:
        children = psutil.Process(parent).children()
    except psutil.Error:
        return []
    return [child for child in children if child.pid != os.getpid()]


def is_ancestor(pid: int) -> bool:
    """True while `pid` is this process's parent, or its parent's parent and so on (a
    process that exits hands its children to another, so a dead or reused pid is not)."""
    if os.getppid() == pid:
        return True
    try:
        return any(proc.pid == pid for proc in psutil.Process().parents())
    except psutil.Error:
        return False


def stop_processes(procs: list[psutil.Process], wait_s: float = STOP_WAIT_S) -> None:
    """SIGTERM each that still runs (psutil checks it is the same process, not a reused
    pid), then SIGKILL what outlives `wait_s`."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=wait_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def watch_parent(
    parent: int,
    poll_s: float = POLL_S,
    on_orphaned: Callable[[], None] | None = None,
) -> threading.Thread:
    """Start the daemon thread that ends this worker's siblings, then the worker (SIGTERM
    to itself, or `on_orphaned`), once `parent` (the pid of the process that started it,
    as that process gave it: the worker may start after its parent is gone) is gone."""
    known = siblings(parent) if is_ancestor(parent) else []

    def run() -> None:
        nonlocal known
        refreshed = time.monotonic()
        while is_ancestor(parent):
            time.sleep(poll_s)
            if time.monotonic() - refreshed >= REFRESH_S:
                known, refreshed = siblings(parent) or known, time.monotonic()
        logger.error(
            "the gateway's parent process %d is gone: stopping its %d other processes and "
            "this worker",
            parent,
            len(known),
        )
        stop_processes(known)
        if on_orphaned is not None:
            on_orphaned()
        else:
            os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=run, name="parent-watch", daemon=True)
    thread.start()
    return thread
