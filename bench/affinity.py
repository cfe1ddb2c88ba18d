"""CPU affinity for one server's processes: its engine core on physical cores of its own.

On the H200 host vLLM's engine core takes 3.4-4.1 ms per decode step at concurrency 64,
far more than the GPU needs for a 0.6B model: the step is bound by the engine core's
Python. `bench.run --pin-engine-cores N` asks whether the front end's own processes slow
it down by sharing its CPUs: it runs each session's plan twice, once as the OS places the
processes and once with every thread of the engine core on N physical cores (hyperthread
siblings included) and every other process of the server on the remaining CPUs. On the
H200 they did not (docs/benchmarks/profiling.md, "Session 17").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.procfs import is_engine_core

SYS_CPU = Path("/sys/devices/system/cpu")


def parse_cpu_list(text: str) -> set[int]:
    """The kernel's CPU list format ("0-3,8,10-11") as a set."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi) + 1) if sep else {int(lo)})
    return cpus


def physical_cores(allowed: Iterable[int], root: Path = SYS_CPU) -> list[frozenset[int]]:
    """The allowed CPUs grouped by physical core (hyperthread siblings together), in order
    of their lowest CPU; a CPU whose topology can't be read is a core of its own."""
    groups: dict[frozenset[int], None] = {}
    allowed = set(allowed)
    for cpu in sorted(allowed):
        path = root / f"cpu{cpu}" / "topology" / "thread_siblings_list"
        try:
            siblings = parse_cpu_list(path.read_text()) & allowed
        except (OSError, ValueError):
            siblings = set()
        groups[frozenset(siblings | {cpu})] = None
    return list(groups)


def split_cpus(
    allowed: Iterable[int], cores: int, root: Path = SYS_CPU
) -> tuple[frozenset[int], frozenset[int]]:
    """(engine CPUs, the rest): the last `cores` physical cores for the engine core;
    ValueError when nothing would be left for the rest."""
    groups = physical_cores(allowed, root)
    if cores < 1 or cores >= len(groups):
        raise ValueError(f"{cores} engine cores of {len(groups)} physical cores")
    engine = frozenset().union(*groups[-cores:])
    rest = frozenset().union(*groups[:-cores])
    return engine, rest


def set_threads(pid: int, cpus: Iterable[int]) -> int:
    """Every thread of `pid` onto `cpus` (affinity is per thread, and threads started
    later inherit their starter's); the number of threads set."""
    done = 0
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(tid), set(cpus))
                done += 1
    return done


def place(root_pid: int, engine: Iterable[int], rest: Iterable[int]) -> dict[str, Any]:
    """The engine core processes under `root_pid` onto `engine`, the server's other
    processes (`root_pid` included) onto `rest`; what was set, for the results file."""
    import psutil

    record: dict[str, Any] = {"engine_cpus": sorted(engine), "other_cpus": sorted(rest)}
    record["engine_pids"], record["other_pids"], record["threads"] = [], [], 0
    family = [psutil.Process(root_pid)]
    with contextlib.suppress(psutil.Error):
        family += family[0].children(recursive=True)
    for proc in family:
        engine_side = is_engine_core(proc)
        record["threads"] += set_threads(proc.pid, engine if engine_side else rest)
        record["engine_pids" if engine_side else "other_pids"].append(proc.pid)
    return record


@contextmanager
def engine_apart(root_pid: int, cores: int) -> Iterator[dict[str, Any]]:
    """Within: the server under `root_pid` placed by `place` (engine core on the last
    `cores` physical cores of this process's CPUs); after: all of them on all of them."""
    allowed = os.sched_getaffinity(0)
    engine, rest = split_cpus(allowed, cores)
    record = place(root_pid, engine, rest)
    try:
        yield record
    finally:
        with contextlib.suppress(Exception):
            place(root_pid, allowed, allowed)
