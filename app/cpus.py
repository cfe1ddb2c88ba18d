"""The CPUs this process may run on."""

from __future__ import annotations

import functools
import os


@functools.cache
def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity; the machine's count where there is
    none), worked out once."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return os.cpu_count() or 1
