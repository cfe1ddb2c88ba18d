"""Where a burst of requests waits inside vLLM's engine core, from its own functions (a
diagnostic, off unless asked; the same for every server on the same vLLM):

    ENGINE_TRACE_DIR=/tmp/trace PYTHONPATH=$PWD/bench/trace_site python -m app serve ...
    python -m bench.engine_trace_report /tmp/trace [the servers' logs, to name the cores]

With `ENGINE_TRACE_DIR` set, `bench/trace_site/sitecustomize.py` calls `install` in every
Python process started with that `PYTHONPATH`; each process that imports vLLM's engine
modules writes `trace-<pid>.log` there, one line per event (`event id monotonic-time
thread [fields]`): the HTTP side's engine client sending a request (`send`), the engine
core's input thread taking it in and building its Request (`recv`, `pre_done`), the busy
loop adding it to the scheduler (`core_add`), each engine step (`step`, `step_end`) with
what the scheduler put in it (`sched`: tokens, new requests, waiting, running), and the
garbage collector's passes of generation 1 or 2, or over 1 ms (`gc`: generation, ms).
`ENGINE_TRACE_SWITCH_S` also sets the engine core's `sys.setswitchinterval` (an
experiment: how long a thread waits for the interpreter lock). `ENGINE_TRACE_PROBE_MS`
starts a thread in the engine core that sleeps that long again and again and writes each
wake-up at least `PROBE_LATE_S` late (`probe`: ms late): a thread that has slept must win
the interpreter lock back before it runs, so its lateness is how long any thread of the
engine core waits for the lock (the operating system's own wake-up adds tens of µs on an
idle host). `bench.engine_trace_report` reads the logs.
"""

from __future__ import annotations

import collections
import gc
import importlib.abc
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

QUIET_S = 0.5
WINDOW_S = 0.4
PROBE_LATE_S = 0.0005


class _Log:
    """One file per process, opened on the first event; collections are queued by the
    collector's callback (which can run inside a write) and written with the next event."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.lock = threading.Lock()
        self.out: Any = None
        self.pending: collections.deque[str] = collections.deque()
        self.gc_started: dict[int, float] = {}

    def __call__(self, event: str, rid: str, extra: str = "") -> None:
        now = time.monotonic()
        name = threading.current_thread().name.replace(" ", "_")
        with self.lock:
            if self.out is None:
                os.makedirs(self.directory, exist_ok=True)
                path = f"{self.directory}/trace-{os.getpid()}.log"
                self.out = open(path, "a", buffering=1)  # noqa: SIM115 (the process's life)
            while self.pending:
                self.out.write(self.pending.popleft())
            self.out.write(f"{event} {rid} {now:.6f} {name} {extra}\n")

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            self.gc_started[ident] = time.monotonic()
            return
        began = self.gc_started.pop(ident, None)
        took_ms = (time.monotonic() - began) * 1e3 if began is not None else 0.0
        if began is not None and (info.get("generation", 0) >= 1 or took_ms > 1.0):
            self.pending.append(
                f"gc - {began:.6f} collector {info.get('generation')} {took_ms:.2f}\n"
            )


def _wrap(cls: Any, name: str, before: Callable[..., None], after: Callable[..., None]) -> None:
    original = getattr(cls, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        before(self, *args)
        result = original(self, *args, **kwargs)
        after(self, result, *args)
        return result

    setattr(cls, name, wrapper)


def _patch_client(module: Any, log: _Log) -> None:
    cls = module.AsyncMPClient
    original = cls.add_request_async

    async def add_request_async(self: Any, request: Any) -> Any:
        log("send", request.request_id)
        return await original(self, request)

    cls.add_request_async = add_request_async


def _patch_core(module: Any, log: _Log) -> None:
    nothing = lambda *_: None  # noqa: E731
    _wrap(
        module.EngineCore,
        "preprocess_add_request",
        lambda _s, request: log("recv", request.request_id),
        lambda _s, _r, request: log("pre_done", request.request_id),
    )
    for cls in (module.EngineCore, module.EngineCoreProc):
        if "add_request" in cls.__dict__:
            _wrap(cls, "add_request", lambda _s, r, *_: log("core_add", r.request_id), nothing)
    _wrap(
        module.EngineCoreProc,
        "_process_engine_step",
        lambda _s: log("step", "-"),
        lambda *_: log("step_end", "-"),
    )
    switch = os.environ.get("ENGINE_TRACE_SWITCH_S")
    if switch:

        def set_switch(_self: Any) -> None:
            sys.setswitchinterval(float(switch))
            log("switch", "-", switch)

        _wrap(module.EngineCoreProc, "run_busy_loop", set_switch, nothing)
    probe_ms = os.environ.get("ENGINE_TRACE_PROBE_MS")
    if probe_ms:

        def start_probe(_self: Any) -> None:
            args = (log, float(probe_ms) / 1e3, time.sleep, time.monotonic)
            threading.Thread(target=probe, args=args, name="gil_probe", daemon=True).start()

        _wrap(module.EngineCoreProc, "run_busy_loop", start_probe, nothing)


def probe(
    log: _Log,
    period_s: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    rounds: int | None = None,
) -> None:
    """Sleep `period_s` `rounds` times (for ever by default); log each wake-up that came
    `PROBE_LATE_S` or more after it was due."""
    done = 0
    while rounds is None or done < rounds:
        due = clock() + period_s
        sleep(period_s)
        late = clock() - due
        if late >= PROBE_LATE_S:
            log("probe", "-", f"{late * 1e3:.2f}")
        done += 1


def _patch_scheduler(module: Any, log: _Log) -> None:
    def after(sched: Any, out: Any, *_: Any) -> None:
        counts = (
            out.total_num_scheduled_tokens,
            len(out.scheduled_new_reqs),
            len(sched.waiting),
            len(sched.running),
        )
        log("sched", "-", " ".join(map(str, counts)))

    _wrap(module.Scheduler, "schedule", lambda *_: None, after)


PATCHES = {
    "vllm.v1.engine.core_client": _patch_client,
    "vllm.v1.engine.core": _patch_core,
    "vllm.v1.core.sched.scheduler": _patch_scheduler,
}


class _Finder(importlib.abc.MetaPathFinder):
    """Patches each module of `PATCHES` right after it runs, wherever it is imported."""

    def __init__(self, log: _Log) -> None:
        self.log = log

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader: Any = spec.loader
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            try:
                PATCHES[name](module, self.log)
            except Exception as exc:  # a diagnostic never stops a server
                self.log("patch_failed", name, repr(exc).replace("\n", " "))

        loader.exec_module = exec_module
        return spec


def install(directory: str) -> None:
    """Trace this process into `directory` (see the module's doc)."""
    log = _Log(directory)
    gc.callbacks.append(log.on_gc)
    sys.meta_path.insert(0, _Finder(log))
