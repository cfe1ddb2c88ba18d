"""What /proc says about one process: memory, the CPU it ran on, whether it is an HTTP
worker."""

from __future__ import annotations

from typing import Any


def read_status_kib(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def current_core(pid: int) -> int | None:
    """The CPU the process's main thread last ran on (field 39 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[36])
    except (OSError, ValueError, IndexError):
        return None


def is_api_worker(proc: Any) -> bool:
    """An HTTP worker process of `--api-server-count N` (vLLM titles them APIServer_i)."""
    return "APIServer" in " ".join(proc.cmdline())


def rss_kib(pid: int) -> int | None:
    return read_status_kib(pid, "VmRSS")


def pss_kib(pid: int) -> int | None:
    """Proportional set size: the process's resident pages, each page shared with other
    processes (libraries, the engine's mapped weights) split among them. Summed over
    several processes it counts shared memory once, where RSS counts it in each."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None
