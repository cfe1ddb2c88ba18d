"""app.listener: workers sharing one listening socket take a burst of connections in turns."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from app.listener import TurnListener


class Counted(asyncio.Protocol):
    def __init__(self, into: set[asyncio.Protocol]) -> None:
        self.into = into

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.into.add(self)


async def _held(held: list[set[asyncio.Protocol]], total: int) -> list[int]:
    deadline = time.monotonic() + 5
    while sum(map(len, held)) < total and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    return [len(h) for h in held]


async def _burst(listen: type[TurnListener] | None, connections: int) -> list[int]:
    """`connections` clients connect before two "workers" (one listening socket, a
    descriptor each) get to run; how many each worker took."""
    server = socket.create_server(("127.0.0.1", 0), backlog=64)
    socks = [server, server.dup()]
    held: list[set[asyncio.Protocol]] = [set(), set()]
    loop = asyncio.get_running_loop()
    listeners: list[TurnListener] = []
    servers: list[asyncio.AbstractServer] = []
    clients = [socket.create_connection(server.getsockname()) for _ in range(connections)]
    try:
        for sock, into in zip(socks, held, strict=True):
            if listen is None:  # the event loop's own listener, as uvicorn's
                servers.append(await loop.create_server(lambda into=into: Counted(into), sock=sock))
            else:
                listeners.append(listen(sock, lambda into=into: Counted(into)))
        return await _held(held, connections)
    finally:
        for listener in listeners:
            listener.close()
        for srv in servers:
            srv.close()
        for sock in clients + socks:
            sock.close()


@pytest.mark.asyncio
async def test_a_burst_of_connections_is_shared_in_turns() -> None:
    assert await _burst(TurnListener, 8) == [4, 4]


@pytest.mark.asyncio
async def test_the_loops_own_listener_lets_one_worker_take_the_burst() -> None:
    """What `TurnListener` is for: the first listener to run takes every waiting one."""
    assert sorted(await _burst(None, 8)) == [0, 8]
