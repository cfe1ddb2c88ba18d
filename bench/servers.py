"""Start, watch and stop one OpenAI server process (the gateway or vLLM's own).

Each server runs in its own process session so that stopping it also stops the engine
processes it spawned. The API-server process's memory is polled while it runs; its
kernel-recorded peak (VmHWM) is read just before it is stopped.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.http_calls import get_json, get_status
from bench.procfs import (
    AttachedProc,
    cpu_walk,
    current_core,
    descendants,
    engine_core_threads,
    front_end_pss_mib,
    is_api_worker,
    read_status_kib,
    reap,
    rss_kib,
)

try:
    import psutil
except ImportError:  # pragma: no cover - psutil ships with vLLM
    psutil = None

_LIVE: set[ServerProcess] = set()


class ServerError(RuntimeError):
    """The server did not come up, or died."""


@dataclass
class MemoryStats:
    """Memory of the API-server process (the one that serves HTTP), in MiB."""

    rss_peak_polled_mib: float = 0.0
    rss_peak_load_mib: float = 0.0  # while benchmarks ran (after start-up)
    vm_hwm_mib: float | None = None  # kernel's high-water mark since exec
    children_rss_mib: float = 0.0  # engine processes at the last poll, for context
    # with --api-server-count N: the N HTTP worker processes together (peak of the sums)
    api_workers_rss_peak_mib: float = 0.0
    api_workers: int = 0
    # procfs.front_end_pss_mib: peak of the sums, sampled with the workers (every 20th poll)
    front_end_pss_peak_mib: float = 0.0
    samples: int = 0
    # which CPU the API-server's main thread was on at each poll (placement matters on
    # small machines where vLLM pins its CPU worker to one core)
    core_samples: dict[int, int] = field(default_factory=dict)


@dataclass(eq=False)
class ServerProcess:
    """A server command line, started in a new session, with a memory poller."""

    name: str
    argv: list[str]
    port: int
    env: dict[str, str]
    log_path: Path
    cwd: str | None = None
    poll_interval_s: float = 0.25
    proc: subprocess.Popen[bytes] | AttachedProc | None = None
    memory: MemoryStats = field(default_factory=MemoryStats)
    started_at: float = 0.0
    ready_after_s: float | None = None
    _log: IO[bytes] | None = None
    _stop_poll: threading.Event = field(default_factory=threading.Event)
    _poller: threading.Thread | None = None
    _under_load: bool = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log.write(f"$ {' '.join(self.argv)}\n".encode())
        self._log.flush()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,  # its own process group: stop() ends the engine too
        )
        self._watch()

    def attach(self, pid: int) -> None:
        """Take over this command line's server that an earlier bench.run left running as
        `pid` (`bench.kept`): watched and stopped as one started here, its log appended to."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.started_at = time.monotonic()
        self.proc = AttachedProc(pid)
        self._watch()

    def _watch(self) -> None:
        _LIVE.add(self)
        self._poller = threading.Thread(target=self._poll, name=f"rss-{self.name}", daemon=True)
        self._poller.start()

    def leave_running(self) -> None:
        """Not stopped by `stop_all` (at this process's exit): left for a later bench.run."""
        _LIVE.discard(self)

    def _poll(self) -> None:
        assert self.proc is not None
        pid = self.proc.pid
        while not self._stop_poll.wait(self.poll_interval_s):
            kib = rss_kib(pid)
            if kib is None:
                return
            mib = kib / 1024
            mem = self.memory
            mem.samples += 1
            mem.rss_peak_polled_mib = max(mem.rss_peak_polled_mib, mib)
            core = current_core(pid)
            if core is not None and self._under_load:
                mem.core_samples[core] = mem.core_samples.get(core, 0) + 1
            if self._under_load:
                mem.rss_peak_load_mib = max(mem.rss_peak_load_mib, mib)
            if psutil is not None and mem.samples % 20 == 1:
                with contextlib.suppress(Exception):
                    kids = psutil.Process(pid).children(recursive=True)
                    mem.children_rss_mib = sum(k.memory_info().rss for k in kids) / 2**20
                    workers = [k for k in kids if is_api_worker(k)]
                    rss = sum(k.memory_info().rss for k in workers) / 2**20
                    mem.api_workers = max(mem.api_workers, len(workers))
                    mem.api_workers_rss_peak_mib = max(mem.api_workers_rss_peak_mib, rss)
                    front = front_end_pss_mib(pid, kids)
                    if front is not None:
                        mem.front_end_pss_peak_mib = max(mem.front_end_pss_peak_mib, front)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout_s: float) -> float:
        """Block until /health answers 200 and /v1/models lists a model; seconds taken."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise ServerError(
                    f"{self.name} exited with {self.proc.returncode if self.proc else '?'} "
                    f"before it was ready; see {self.log_path}"
                )
            if get_status(self.base_url + "/health", 2.0) == 200:
                body = get_json(self.base_url + "/v1/models", 5.0)
                if body and body.get("data"):
                    self.ready_after_s = time.monotonic() - self.started_at
                    self._check_listener()
                    return self.ready_after_s
            time.sleep(1.0)
        raise ServerError(f"{self.name} not ready after {timeout_s:.0f} s; see {self.log_path}")

    def _check_listener(self) -> None:
        """The process we measure must be the one that owns the listening socket."""
        if psutil is None or self.proc is None:
            return
        with contextlib.suppress(Exception):
            conns = psutil.Process(self.proc.pid).net_connections(kind="tcp")
            ports = {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN}
            if self.port not in ports:
                msg = f"note: pid {self.proc.pid} does not own port {self.port} ({ports})\n"
                if self._log:
                    self._log.write(msg.encode())

    def cpu_seconds(self) -> tuple[float | None, float | None]:
        """CPU seconds used so far by the HTTP front end (the API-server process and its
        HTTP worker processes, if any) and by the other descendants (the engine)."""
        walked = self._cpu_walk()
        if walked is None:
            return None, None
        own, workers, engine = walked
        return own + sum(workers.values()), engine

    def worker_cpu(self) -> dict[str, float]:
        """CPU seconds so far of each HTTP worker process, by its title (`APIServer_0`, ...);
        {} for a server without workers."""
        walked = self._cpu_walk()
        return {} if walked is None else walked[1]

    def _cpu_walk(self) -> tuple[float, dict[str, float], float] | None:
        return None if psutil is None or self.proc is None else cpu_walk(self.proc.pid)

    def engine_threads(self) -> dict[str, float]:
        """CPU seconds so far of each thread of the engine core process ({} if not found)."""
        return engine_core_threads(self.proc.pid if self.proc else None)

    def set_under_load(self, value: bool) -> None:
        self._under_load = value

    def snapshot_memory(self) -> dict[str, Any]:
        if self.proc is not None:
            hwm = read_status_kib(self.proc.pid, "VmHWM")
            if hwm is not None:
                self.memory.vm_hwm_mib = hwm / 1024
        return {
            "pid": self.proc.pid if self.proc else None,
            "vm_hwm_mib": _round(self.memory.vm_hwm_mib),
            "rss_peak_polled_mib": _round(self.memory.rss_peak_polled_mib),
            "rss_peak_under_load_mib": _round(self.memory.rss_peak_load_mib),
            "engine_children_rss_mib": _round(self.memory.children_rss_mib),
            "api_workers": self.memory.api_workers,
            "api_workers_rss_peak_mib": _round(self.memory.api_workers_rss_peak_mib),
            "front_end_pss_peak_mib": _round(self.memory.front_end_pss_peak_mib or None),
            "rss_samples": self.memory.samples,
            "api_server_core_samples": dict(sorted(self.memory.core_samples.items())),
        }

    def stop(self, grace_s: float = 30.0) -> int | None:
        """SIGINT the process group, then SIGTERM, then SIGKILL; returns the exit code."""
        self._stop_poll.set()
        code = None if self.proc is None else stop_group(self.proc, grace_s)
        if self._log is not None:
            self._log.close()
            self._log = None
        _LIVE.discard(self)
        return code


def stop_group(proc: subprocess.Popen[bytes] | AttachedProc, grace_s: float = 30.0) -> int | None:
    """End a server started in a session of its own and what it started (its pid leads
    their process group): SIGINT, then SIGTERM, then SIGKILL for the group's stragglers
    (engine workers), then wait for its descendants (an engine core's GPU memory is free
    only once it has exited); the server's exit code."""
    pgid = proc.pid  # start_new_session: the group id is the leader's pid
    family = descendants(proc.pid)
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 10.0)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10.0)
    reap(family)
    return proc.returncode


def stop_all() -> None:
    """Stop every server still running (on errors and at exit)."""
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop(grace_s=5.0)


def stop_all_on_exit() -> None:
    """Stop the servers when this process exits, on SIGTERM and SIGHUP too (a tool run
    under `timeout` would otherwise leave them behind: they run in their own sessions)."""
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)


def _on_signal(signum: int, _frame: Any) -> None:
    stop_all()
    raise SystemExit(128 + signum)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
