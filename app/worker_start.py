"""How the HTTP workers of `--api-server-count N` are started: spawned, or forked from a
server process that has imported them once.

vLLM's launcher spawns each worker, so each one imports vLLM, torch and transformers
afresh: most of a worker's memory is that import (about 1 GiB on the H200, where four
workers held 4.9 GiB PSS against the Rust frontend's 1). With `forkserver`, Python starts
one clean process (no threads, no CUDA context, no sockets of the launcher's), imports the
workers' modules there once, and forks each worker from it: the pages of those imports are
shared between the workers until one writes to them.

vLLM's launcher asks `multiprocessing.get_context("spawn")` in `vllm.v1.utils` (0.26 and
0.32 alike); `worker_start` hands it the forkserver context instead while it starts the
workers, everything else it asks of `multiprocessing` unchanged.
"""

from __future__ import annotations

import multiprocessing
import os
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from app.shared_tokenizer import ENV, TokenizerKey

WorkerStart = Literal["spawn", "forkserver"]

PRELOAD = (
    "app.workers",
    "app.main",
    "app.server",
    "app.cli",
    "vllm.v1.engine.async_llm",
    "app.fork_preload",
)
"""What the fork server imports before forking: what every worker imports anyway, and
last the entry that loads the workers' tokenizer there (`app.shared_tokenizer`)."""


class _Multiprocessing(types.ModuleType):
    """`multiprocessing` as the launcher sees it: "spawn" means `method`."""

    def __init__(self, method: WorkerStart) -> None:
        super().__init__("multiprocessing")
        self._method = method

    def get_context(self, method: str | None = None) -> Any:
        if method == "spawn":
            method = self._method
        return multiprocessing.get_context(method)

    def __getattr__(self, name: str) -> Any:
        return getattr(multiprocessing, name)


@contextmanager
def worker_start(
    method: WorkerStart, target: types.ModuleType, tokenizer: TokenizerKey | None = None
) -> Iterator[None]:
    """While inside, `target` (vLLM's `vllm.v1.utils`) starts processes by `method`; a
    fork server started meanwhile loads `tokenizer` for the workers it forks."""
    if method == "spawn":
        yield
        return
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(PRELOAD))
    previous = target.multiprocessing
    target.multiprocessing = _Multiprocessing(method)  # type: ignore[attr-defined]
    env_before = os.environ.get(ENV)
    if tokenizer is not None:  # the fork server inherits this process's environment
        os.environ[ENV] = tokenizer.to_json()
    try:
        yield
    finally:
        target.multiprocessing = previous  # type: ignore[attr-defined]
        if env_before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = env_before
