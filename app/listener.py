"""An HTTP worker's listener that takes one waiting connection per turn of its event loop.

Several HTTP workers (`--api-server-count N`) share one listening socket, and the kernel
wakes every one of them for a new connection. An event loop's own listener (uvloop's,
libuv's) then accepts every connection waiting: the first worker awake takes a whole
burst. `vllm bench serve` opens its connections at once, and on the 2-core box 64 of them
landed 46/14/3/1 on four workers; on the H200 at concurrency 256 one worker of four
used 29.6 CPU-seconds in a run where the others used 6.7-11.8 (session 31). This one
accepts one connection and goes back to its loop, so the workers take turns; a worker
busy with its streams comes back later and takes fewer. Who runs first is still the
scheduler's choice (on the 2-core box one worker once took 15 of 16), so with
`--spread-connections` each worker listens on a socket of its own (app.reuse_port) and
this serves only where that can't be; `--connections-per-worker` (app.accept_gate)
builds on it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

logger = logging.getLogger(__name__)

RETRY_S = 1.0
"""How long a worker waits after a failed accept (out of file descriptors, say)."""


class TurnListener:
    """Accepts the shared listening socket's connections one per event-loop turn and hands
    each to the loop with uvicorn's protocol; `close` and `wait_closed` as uvicorn's
    shutdown calls them."""

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        backlog: int = 2048,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._sock = sock
        self._factory = protocol_factory
        self._opening = 0  # accepted, not yet handed to the protocol
        self._tasks: set[asyncio.Task[None]] = set()
        self._recheck: asyncio.TimerHandle | None = None
        self._closed = False
        sock.setblocking(False)
        sock.listen(backlog)  # bound, not yet listening (as asyncio's create_server does)
        self._loop.add_reader(sock.fileno(), self._readable)
        self._announce()

    def _announce(self) -> None:
        logger.info("HTTP worker takes new connections one per turn of its event loop")

    def _readable(self) -> None:
        self._accept_one()

    def _pause(self, seconds: float) -> None:
        """Stop watching the socket for `seconds` (not at every wake-up meanwhile)."""
        self._loop.remove_reader(self._sock.fileno())
        self._recheck = self._loop.call_later(seconds, self._look_again)

    def _look_again(self) -> None:
        self._recheck = None
        if not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._readable)

    def _accept_one(self) -> bool:
        """Take one waiting connection; False when there is none (another worker took it)."""
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:  # out of file descriptors and the like: try again later
            logger.warning("accept failed, trying again in %.0f s: %s", RETRY_S, exc)
            self._pause(RETRY_S)
            return False
        conn.setblocking(False)
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._opening += 1
        task = self._loop.create_task(self._open(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _open(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._factory, conn)
        except OSError as exc:  # the client went away meanwhile
            logger.debug("connection not opened: %s", exc)
            conn.close()
        finally:
            self._opening -= 1

    def close(self) -> None:
        """Stop accepting."""
        if self._closed:
            return
        self._closed = True
        if self._recheck is not None:
            self._recheck.cancel()
        self._loop.remove_reader(self._sock.fileno())

    async def wait_closed(self) -> None:
        return None
