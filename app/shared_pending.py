"""The admission count shared by the HTTP worker processes of one gateway.

With `--api-server-count N` each worker admits requests on its own; counted per worker,
`--max-pending-requests 2` let 2 into every worker (8 with four). One counter in shared
memory, created by the launcher and handed to each worker as it is spawned, keeps the
limit the gateway's.
"""

from __future__ import annotations

import multiprocessing
from typing import Any


class SharedPending:
    """Requests inside the gateway, over all its workers (a lock-guarded shared int)."""

    def __init__(self) -> None:
        self._count: Any = multiprocessing.get_context("spawn").Value("i", 0)

    def enter(self, limit: int) -> bool:
        """Count one more request unless `limit` are inside already."""
        with self._count.get_lock():
            if self._count.value >= limit:
                return False
            self._count.value += 1
            return True

    def leave(self) -> None:
        with self._count.get_lock():
            self._count.value -= 1

    @property
    def value(self) -> int:
        return int(self._count.value)
