"""An HTTP worker's own listening socket on the shared address (SO_REUSEPORT).

vLLM's multi-API-server launcher binds one socket, with SO_REUSEPORT set, and every worker
inherits it. On one shared socket the kernel wakes every worker for a new connection and
the first one awake takes the whole burst: `vllm bench serve` opens its connections at
once, and on the H200 at concurrency 256 one worker of four used 29.6 CPU-seconds in a
run where the others used 6.7-11.8 (session 31). Taking one connection per event-loop
turn (app.listener) still leaves the split to the scheduler: on the 2-core box a worker
the scheduler left waiting got 1 of 16. With a socket of its own in the port's
SO_REUSEPORT group each worker has its own accept queue, and the kernel hands each new
connection to one of them by a hash of its addresses: a burst splits evenly whoever is
awake.
"""

from __future__ import annotations

import logging
import socket

logger = logging.getLogger(__name__)


def own_socket(shared: socket.socket) -> socket.socket | None:
    """A new socket bound, with SO_REUSEPORT, to `shared`'s address (not yet listening);
    None where that can't be (not TCP over IP, `shared` bound without SO_REUSEPORT, or the
    bind refused): the caller then serves the shared socket."""
    if shared.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    if not shared.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT):
        logger.info("listening socket bound without SO_REUSEPORT: the workers share it")
        return None
    own = socket.socket(shared.family, socket.SOCK_STREAM)
    try:
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        own.bind(shared.getsockname())
    except OSError as exc:
        own.close()
        logger.warning("no listening socket of its own (%s): the workers share one", exc)
        return None
    return own


def own_sockets(shared: list[socket.socket]) -> list[socket.socket] | None:
    """`own_socket` for each shared socket; None (and none left open) if any can't be."""
    own = [own_socket(sock) for sock in shared]
    if all(sock is not None for sock in own):
        return [sock for sock in own if sock is not None]
    for sock in own:
        if sock is not None:
            sock.close()
    return None
