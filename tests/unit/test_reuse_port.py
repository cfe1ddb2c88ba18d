"""app.reuse_port: each HTTP worker's own socket in the port's SO_REUSEPORT group."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from app.reuse_port import own_socket, own_sockets


def _shared(reuse_port: bool) -> socket.socket:
    """Bound, not listening, as vLLM's launcher leaves the socket it hands the workers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class Counted(asyncio.Protocol):
    def __init__(self, into: list[asyncio.BaseTransport]) -> None:
        self.into = into

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.into.append(transport)


def test_own_socket_is_bound_to_the_shared_address_not_listening() -> None:
    shared = _shared(reuse_port=True)
    own = own_socket(shared)
    try:
        assert own is not None
        assert own.getsockname() == shared.getsockname()
        assert own.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)
        assert not own.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    finally:
        shared.close()
        if own is not None:
            own.close()


def test_without_reuse_port_on_the_shared_socket_the_workers_share_it() -> None:
    shared = _shared(reuse_port=False)
    try:
        assert own_socket(shared) is None
        assert own_sockets([shared]) is None
    finally:
        shared.close()


def test_a_unix_socket_is_shared() -> None:
    left, right = socket.socketpair()
    try:
        assert own_socket(left) is None
    finally:
        left.close()
        right.close()


@pytest.mark.asyncio
async def test_a_burst_is_split_by_the_kernel_whoever_runs_first() -> None:
    """Two workers' own sockets, each served by the event loop's own listener (which takes
    every connection waiting): the connections were dealt out before either ran."""
    shared = _shared(reuse_port=True)
    own = [own_socket(shared), own_socket(shared)]
    assert all(sock is not None for sock in own)
    loop = asyncio.get_running_loop()
    held: list[list[asyncio.BaseTransport]] = [[], []]
    servers = []
    for sock in own:  # listening (so in the group) before any client connects
        assert sock is not None
        sock.listen(128)
    clients = [socket.create_connection(shared.getsockname()) for _ in range(64)]
    try:
        for sock, into in zip(own, held, strict=True):
            servers.append(await loop.create_server(lambda into=into: Counted(into), sock=sock))
        deadline = time.monotonic() + 5
        while sum(map(len, held)) < 64 and time.monotonic() < deadline:
            await asyncio.sleep(0.002)
        counts = [len(h) for h in held]
        assert sum(counts) == 64
        assert min(counts) >= 16, counts  # a fair hash: 32 +- 4; below 16 has p < 1e-4
    finally:
        for srv in servers:
            srv.close()
        for client in clients:
            client.close()
        shared.close()
