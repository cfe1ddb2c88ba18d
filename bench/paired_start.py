"""bench.paired's start-up: the servers one after another, a hung one dropped.

Each engine sizes its memory on what the earlier ones left, so they start in turn. In
session 22 on the H200 the third of three hung in its engine core after CUDA-graph
capture; waiting for it spent the device call, and no turn ran for the two that were
ready. A server not ready within the timeout (or exiting first) is now stopped and left
out, and the others take their turns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar


class Startable(Protocol):
    def start(self) -> None: ...

    def wait_ready(self, timeout_s: float) -> float: ...

    def stop(self, grace_s: float = ...) -> int | None: ...


S = TypeVar("S", bound=Startable)


def start_each(
    starters: Iterable[tuple[str, Callable[[], S]]],
    ready_timeout_s: float,
    say: Callable[[str], None] = print,
) -> tuple[dict[str, S], dict[str, str]]:
    """Start each (label, make server) in order and wait for it; returns the ready servers
    by label and, for each one dropped, why (not ready in time, exited, failed to start)."""
    ready: dict[str, S] = {}
    dropped: dict[str, str] = {}
    for label, make in starters:
        server = make()
        try:
            server.start()
            say(f"paired: {label} ready after {server.wait_ready(ready_timeout_s):.0f} s")
        except Exception as exc:  # any start-up failure drops that server
            dropped[label] = str(exc)[:300]
            say(f"paired: {label} dropped: {dropped[label]}")
            server.stop(grace_s=5.0)
            continue
        ready[label] = server
    return ready, dropped
