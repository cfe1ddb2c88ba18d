"""Before the engine loads: is the gateway's address already taken?

In one process uvicorn binds its port after the lifespan, that is after the engine has
loaded (a minute or more for a real model on a GPU), so a port another server holds
failed the start only then. With several HTTP workers vLLM's launcher binds first, but
with SO_REUSEPORT: a server that set it too (another gateway or `vllm serve
--api-server-count N`, say a stale one left running) is joined instead of refused, and the
two split the port's new connections. A trial bind without SO_REUSEPORT, at start-up,
fails in both cases.
"""

from __future__ import annotations

import errno
import socket


def address_taken(host: str, port: int) -> str | None:
    """Why `host:port` can't be served (another socket is bound there), or None. Other
    bind errors (an address not on this machine, say) are left to the real bind."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn and vLLM
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"{host}:{port} is in use (another server is bound to it)"
            return None
    return None
