"""app.port_check: a port another socket holds is found before the engine loads."""

from __future__ import annotations

import socket

import pytest

from app.port_check import address_taken


def _listening(reuse_port: bool, host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:  # as vLLM's launcher binds for several HTTP workers
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, 0))
    sock.listen()
    return sock


@pytest.mark.parametrize("reuse_port", [False, True])
def test_a_port_another_server_listens_on_is_taken(reuse_port: bool) -> None:
    with _listening(reuse_port) as other:
        port = other.getsockname()[1]
        found = address_taken("127.0.0.1", port)
        assert found is not None and f"127.0.0.1:{port} is in use" in found
        assert address_taken("0.0.0.0", port) is not None  # all addresses include it


def test_a_free_port_is_not_taken_and_stays_free() -> None:
    with _listening(False) as other:
        port = other.getsockname()[1]
    assert address_taken("127.0.0.1", port) is None
    with socket.create_server(("127.0.0.1", port)):  # the probe left nothing bound
        pass


def test_port_zero_and_foreign_addresses_are_left_to_the_real_bind() -> None:
    assert address_taken("127.0.0.1", 0) is None
    assert address_taken("192.0.2.1", 8000) is None  # not this machine's: EADDRNOTAVAIL
