"""app.accept_gate: the workers filled one after another, on a real listening socket."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from app.accept_gate import STALE_S, GatedListener, WorkerLoads, WorkerSlot, whose_turn


def test_the_first_live_worker_with_room_has_the_turn() -> None:
    now = 100.0
    live = [now] * 3
    assert whose_turn([2, 0, 0], live, 2, now) == 1  # worker 0 full
    assert whose_turn([1, 0, 0], live, 2, now) == 0
    assert whose_turn([2, 2, 2], live, 2, now) is None  # all full: anyone
    stale = [now - STALE_S - 0.01, now, now]
    assert whose_turn([0, 0, 0], stale, 2, now) == 1  # worker 0 not beating: passed over
    assert whose_turn([0, 0], [0.0, 0.0], 2, now) is None  # none started


class Counted(asyncio.Protocol):
    def __init__(self, into: set[asyncio.Protocol]) -> None:
        self.into = into

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.into.add(self)


async def _land(opened: list[socket.socket], held: list[set[asyncio.Protocol]]) -> list[int]:
    """Connect once more and wait until a listener holds the connection: every
    listener's count."""
    total = sum(map(len, held))
    client = socket.create_connection(("127.0.0.1", opened[0].getsockname()[1]))
    opened.append(client)
    deadline = time.monotonic() + 5
    while sum(map(len, held)) == total and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    return [len(h) for h in held]


def _listener(sock: socket.socket, into: set[asyncio.Protocol], slot: WorkerSlot) -> GatedListener:
    return GatedListener(sock, lambda: Counted(into), into, slot)


@pytest.mark.asyncio
async def test_two_workers_fill_in_order_on_one_shared_socket() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    socks = [server, server.dup()]  # one listening socket, a descriptor per "worker"
    held: list[set[asyncio.Protocol]] = [set(), set()]
    loads = WorkerLoads(2)
    listeners = [
        _listener(sock, into, WorkerSlot(index=i, limit=2, loads=loads))
        for i, (sock, into) in enumerate(zip(socks, held, strict=True))
    ]
    opened: list[socket.socket] = [server]
    try:
        seen = [await _land(opened, held) for _ in range(5)]
        # worker 0 until it holds 2, then worker 1 until it holds 2, then either
        assert seen[:4] == [[1, 0], [2, 0], [2, 1], [2, 2]]
        assert sum(seen[4]) == 5
        listeners[0].close()  # stopping: passed over at once, whatever it holds
        assert loads.turn(2, time.monotonic()) is None
    finally:
        for listener in listeners:
            listener.close()
        for sock in opened + socks[1:]:
            sock.close()


class FailingListener:
    """A listening socket whose accept fails (as with no file descriptors left), readable
    all along (a socket pair with a byte waiting)."""

    def __init__(self) -> None:
        self.ends = socket.socketpair()
        self.ends[1].send(b"x")
        self.accepts = 0

    def fileno(self) -> int:
        return self.ends[0].fileno()

    def setblocking(self, flag: bool) -> None:
        pass

    def listen(self, backlog: int) -> None:
        pass

    def accept(self) -> tuple[socket.socket, object]:
        self.accepts += 1
        raise OSError(24, "Too many open files")


@pytest.mark.asyncio
async def test_a_failing_accept_waits_instead_of_spinning() -> None:
    sock = FailingListener()
    held: set[asyncio.Protocol] = set()
    listener = _listener(sock, held, WorkerSlot(index=0, limit=2, loads=WorkerLoads(1)))  # type: ignore[arg-type]
    try:
        await asyncio.sleep(0.2)
        assert sock.accepts == 1  # then RETRY_S before the next try, not once a wake-up
    finally:
        listener.close()
        for end in sock.ends:
            end.close()
