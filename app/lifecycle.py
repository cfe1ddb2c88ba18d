"""Run-time lifecycle: admission bookkeeping, draining on SIGTERM, engine death."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from app.shared_pending import SharedPending

logger = logging.getLogger(__name__)


@dataclass
class Lifecycle:
    """What the gateway is doing: serving, draining, or dead (engine gone)."""

    max_pending: int
    draining: bool = False
    engine_dead: bool = False
    in_flight: int = 0
    exit_code: int | None = None
    # engine request ids of in-flight requests -> abort callbacks
    active: dict[str, Callable[[], object]] = field(default_factory=dict)
    _idle: asyncio.Event | None = None
    # one of several HTTP workers: `max_pending` bounds the requests of all of them
    shared: SharedPending | None = None

    def admit(self) -> str | None:
        """None when a request may enter; otherwise the reason it may not."""
        if self.engine_dead:
            return "engine_dead"
        if self.draining:
            return "shutting_down"
        if self.in_flight >= self.max_pending:
            return "overloaded"
        if self.shared is not None and not self.shared.enter(self.max_pending):
            return "overloaded"
        self.in_flight += 1
        return None

    def release(self) -> None:
        if self.shared is not None:
            self.shared.leave()
        self.in_flight -= 1
        if self.in_flight <= 0 and self._idle is not None:
            self._idle.set()

    async def drain(self, timeout: float) -> int:
        """Stop admitting, wait up to `timeout` for in-flight requests; returns how many remain."""
        self.draining = True
        if self.in_flight > 0:
            self._idle = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), timeout)
        return max(self.in_flight, 0)
