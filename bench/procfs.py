"""What /proc says about one process: memory, the CPU it ran on, its threads' CPU time,
whether it is an HTTP worker, whether it runs; a process this one did not start, watched
as one it did."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
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


def _stat(path: str) -> tuple[str, list[str]]:
    """A /proc stat file: the name in its parentheses, and the fields after them (the
    first of those is field 3, the state). Raises OSError or ValueError."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        data = fh.read()
    return data[data.index("(") + 1 : data.rindex(")")], data[data.rindex(")") + 1 :].split()


def current_core(pid: int) -> int | None:
    """The CPU the process's main thread last ran on (field 39 of /proc/PID/stat)."""
    try:
        return int(_stat(f"/proc/{pid}/stat")[1][36])
    except (OSError, ValueError, IndexError):
        return None


def is_api_worker(proc: Any) -> bool:
    """A process serving HTTP under the one started: an HTTP worker of `--api-server-count
    N` (vLLM titles them APIServer_i), or vLLM's Rust frontend (`vllm-rs frontend`, the
    child that serves HTTP for `vllm serve` with VLLM_USE_RUST_FRONTEND=1)."""
    words = proc.cmdline()
    rust = len(words) > 1 and words[0].endswith("vllm-rs") and words[1] == "frontend"
    return rust or "APIServer" in " ".join(words)


def is_fork_server(proc: Any) -> bool:
    """The fork server that forks the gateway's HTTP workers (`--worker-start forkserver`):
    front-end memory, since what it imported is shared with the workers it forked."""
    with contextlib.suppress(Exception):
        return "multiprocessing.forkserver" in " ".join(proc.cmdline())
    return False


def worker_title(words: list[str]) -> str:
    """A short name for an HTTP-serving process from its command line: `APIServer_2`, or
    the program's name (`vllm-rs`)."""
    found = re.search(r"APIServer_\d+", " ".join(words))
    return found.group(0) if found else (words[0].rsplit("/", 1)[-1] if words else "?")


def is_engine_core(proc: Any) -> bool:
    """vLLM titles its engine core process `VLLM::EngineCore` (setproctitle)."""
    with contextlib.suppress(Exception):
        return "EngineCore" in " ".join(proc.cmdline()) or "EngineCor" in proc.name()
    return False


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


def front_end_pss_mib(root: int, descendants: list[Any]) -> float | None:
    """PSS of the started process, its HTTP workers and the fork server they were forked
    from (if any), shared pages counted once; None when one of them can't be read."""
    front = [k.pid for k in descendants if is_api_worker(k) or is_fork_server(k)]
    pss = [pss_kib(pid) for pid in (root, *front)]
    if None in pss:
        return None
    return sum(k for k in pss if k is not None) / 1024


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) each thread of `pid` has used so far, keyed 'TID:NAME'
    (NAME is the thread's comm: Python threads keep the process's title unless renamed)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    out = {}
    for tid in tids:
        try:
            name, fields = _stat(f"/proc/{pid}/task/{tid}/stat")
            out[f"{tid}:{name}"] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return out


def busiest_threads(
    before: dict[str, float], after: dict[str, float], most: int = 6
) -> list[dict[str, Any]]:
    """Each thread's CPU seconds between two `thread_cpu_seconds` snapshots, the busiest
    first (a thread born in between counts from zero); threads that used none left out."""
    used = sorted(((t, cpu - before.get(t, 0.0)) for t, cpu in after.items()), key=lambda x: -x[1])
    return [{"thread": t, "cpu_s": round(cpu, 3)} for t, cpu in used[:most] if cpu > 0]


def engine_core_pid(root_pid: int | None) -> int | None:
    """The pid of the engine core among `root_pid`'s descendants; None if there is none."""
    try:
        import psutil

        kids = psutil.Process(root_pid).children(recursive=True) if root_pid else []
    except Exception:  # no psutil, or the server is gone
        return None
    for kid in kids:
        if is_engine_core(kid):
            return int(kid.pid)
    return None


def engine_core_threads(root_pid: int | None) -> dict[str, float]:
    """`thread_cpu_seconds` of the engine core among `root_pid`'s descendants ({} if none):
    its busy loop, its input and output socket threads and the rest, one by one."""
    pid = engine_core_pid(root_pid)
    return {} if pid is None else thread_cpu_seconds(pid)


class AttachedProc:
    """What `subprocess.Popen` gives `bench.servers.ServerProcess` (`pid`, `poll`, `wait`,
    `returncode`), for a process this one did not start: a server an earlier bench.run
    left running (`bench.kept`). It is not our child, so its exit code is unknown: -1."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not pid_alive(self.pid):
            self.returncode = -1
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            time.sleep(0.1)
        return self.returncode or -1


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        return _stat(f"/proc/{pid}/stat")[1][0] not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return False


def descendants(pid: int) -> list[Any]:
    """The psutil processes under `pid` ([] where it is gone or psutil is missing)."""
    try:
        import psutil

        return list(psutil.Process(pid).children(recursive=True))
    except Exception:
        return []


def reap(family: list[Any], timeout_s: float = 20.0) -> None:
    """Wait for `family` (psutil processes) to exit; SIGKILL any left after `timeout_s`."""
    if not family:
        return
    import psutil

    with contextlib.suppress(Exception):
        _gone, alive = psutil.wait_procs(family, timeout=timeout_s)
        for p in alive:
            with contextlib.suppress(Exception):
                p.kill()
        psutil.wait_procs(alive, timeout=5)


def cpu_walk(pid: int) -> tuple[float, dict[str, float], float] | None:
    """CPU seconds so far of process `pid`, of each HTTP-serving descendant (by
    `worker_title`) and of the other descendants together; None when unreadable."""
    try:
        import psutil

        proc = psutil.Process(pid)
        own = proc.cpu_times()
        workers: dict[str, float] = {}
        engine = 0.0
        for kid in proc.children(recursive=True):
            with contextlib.suppress(Exception):
                t = kid.cpu_times()
                if is_api_worker(kid):
                    title = worker_title(kid.cmdline())
                    workers[title] = workers.get(title, 0.0) + t.user + t.system
                else:
                    engine += t.user + t.system
        return own.user + own.system, workers, engine
    except Exception:
        return None
