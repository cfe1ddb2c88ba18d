"""bench.paired's start-up: the servers one after another, a late one dropped.

Each engine sizes its memory on what the earlier ones left, so they start in turn. In
sessions 22 and 23 on the H200 the third of three was still starting when the device
call's time ran out (each start took 125-133 s there), and no turn ran for the two that
were ready. A server not ready within the timeout (or exiting first) is stopped and left
out, and so is one that the deadline leaves too little time to start: the others take
their turns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar


class Startable(Protocol):
    def start(self) -> None: ...

    def wait_ready(self, timeout_s: float) -> float: ...

    def stop(self, grace_s: float = ...) -> int | None: ...


S = TypeVar("S", bound=Startable)


LEAST_START_S = 60.0  # the quickest warm start on the H200 was 56 s: less is not tried


def start_each(
    starters: Iterable[tuple[str, Callable[[], S]]],
    ready_timeout_s: float,
    say: Callable[[str], None] = print,
    *,
    ready_by: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[dict[str, S], dict[str, str]]:
    """Start each (label, make server) in order and wait for it; returns the ready servers
    by label and, for each one dropped, why (not ready in time, exited, failed to start,
    not started for want of time). `ready_by` (a `clock()` time): every server must be
    ready by then; one with less than `LEAST_START_S` left is not started."""
    ready: dict[str, S] = {}
    dropped: dict[str, str] = {}
    for label, make in starters:
        timeout_s = ready_timeout_s
        if ready_by is not None:
            left = ready_by - clock()
            if left < LEAST_START_S:
                dropped[label] = f"not started: {max(left, 0.0):.0f} s left to start it"
                say(f"paired: {label} dropped: {dropped[label]}")
                continue
            timeout_s = min(timeout_s, left)
        server = make()
        try:
            server.start()
            say(f"paired: {label} ready after {server.wait_ready(timeout_s):.0f} s")
        except Exception as exc:  # any start-up failure drops that server
            dropped[label] = str(exc)[:300]
            say(f"paired: {label} dropped: {dropped[label]}")
            server.stop(grace_s=5.0)
            continue
        ready[label] = server
    return ready, dropped
