"""`--connections-per-worker T`: fill the HTTP workers one after another.

With `--api-server-count N` every worker is one client of the engine core, and each step
the engine core sends every client that has requests running its outputs as a message of
its own: four workers holding a share of 64 streams each cost the step four messages
where one worker's cost one. On the H200 at concurrency 64, one or two workers had
vLLM's inter-token latency level with the Rust frontend's (profiling.md, session 18),
four had it 9% longer (session 26); at concurrency 256 four workers are what keep the
first tokens coming (session 19).

The kernel spreads new connections over the workers sharing the listening socket. With
a limit T a new connection is instead the turn of the first worker holding fewer than T
(worker 0 first); only that worker takes it. When every worker holds T, any worker takes
it, as without a limit. The workers publish their open connections and a heartbeat in
shared memory (`WorkerLoads`); a worker whose event loop has not beaten for
`STALE_S` (busy for that long, stopping, not started yet) is passed over. Clients keep
their connections open (aiohttp, httpx), so up to T concurrent streams stay on worker 0,
the next T on worker 1, and so on. T = 0 leaves accepting to the event loop, as without
this module.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import socket
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from typing import Any

from app.listener import TurnListener

logger = logging.getLogger(__name__)

BEAT_S = 0.05
"""How often a worker publishes its open connections and heartbeat."""
STALE_S = 0.25
"""A worker whose heartbeat is older than this is passed over."""
RECHECK_S = 0.02
"""How soon a worker whose turn it was not looks at a waiting connection again."""


def whose_turn(counts: Sequence[int], beats: Sequence[float], limit: int, now: float) -> int | None:
    """The first live worker holding fewer than `limit` connections; None when every live
    worker is full (or none is live): then any worker may take the connection."""
    for index, (count, beat) in enumerate(zip(counts, beats, strict=True)):
        if count < limit and now - beat <= STALE_S:
            return index
    return None


class WorkerLoads:
    """Each worker's open connections and last heartbeat (`time.monotonic()`), in shared
    memory made by the launcher and handed to every worker as it is spawned."""

    def __init__(self, workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._counts: Any = ctx.RawArray("i", workers)
        self._beats: Any = ctx.RawArray("d", workers)

    def publish(self, index: int, count: int, beat: float) -> None:
        self._counts[index] = count
        self._beats[index] = beat

    def turn(self, limit: int, now: float) -> int | None:
        return whose_turn(list(self._counts), list(self._beats), limit, now)


@dataclass(frozen=True)
class WorkerSlot:
    """Which worker this is, the connections each worker fills up to (0: off), and the
    loads every worker publishes."""

    index: int
    limit: int
    loads: WorkerLoads


class GatedListener(TurnListener):
    """A `TurnListener` that accepts only when it is this worker's turn (see the module
    docstring), publishing its open connections as it goes."""

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        connections: Sized,
        slot: WorkerSlot,
        backlog: int = 2048,
    ) -> None:
        self._connections = connections
        self._slot = slot
        super().__init__(sock, protocol_factory, backlog)
        self._beat()

    def _announce(self) -> None:
        logger.info(
            "HTTP worker %d takes connections in turn (up to %d before the next worker)",
            self._slot.index,
            self._slot.limit,
        )

    def _open_now(self) -> int:
        return len(self._connections) + self._opening

    def _publish(self) -> None:
        self._slot.loads.publish(self._slot.index, self._open_now(), time.monotonic())

    def _beat(self) -> None:
        if not self._closed:
            self._publish()
            self._loop.call_later(BEAT_S, self._beat)

    def _mine(self) -> bool:
        turn = self._slot.loads.turn(self._slot.limit, time.monotonic())
        return turn is None or turn == self._slot.index

    def _readable(self) -> None:
        self._publish()
        if not self._mine():  # another worker's: look again soon, not at every wake-up
            self._pause(RECHECK_S)
            return
        while self._accept_one():
            self._publish()
            if not self._mine():
                break

    def close(self) -> None:
        """Stop accepting; the other workers pass this one over from now on."""
        if not self._closed:
            self._slot.loads.publish(self._slot.index, 0, 0.0)  # a beat of 0 is long stale
        super().close()
