"""Uvicorn with a graceful drain: on SIGTERM stop admitting (503), let in-flight requests
finish up to `drain_timeout`, abort the rest with an error, then exit."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from app.accept_gate import GatedListener, WorkerSlot
from app.lifecycle import Lifecycle
from app.listener import TurnListener
from app.reuse_port import own_sockets

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.datastructures import State

    from app.settings import Settings

logger = logging.getLogger(__name__)


ENGINE_PROBE_TIMEOUT = 2.0


class GatewayServer(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        app_state: State,
        drain_timeout: float,
        on_started: Callable[[], object] | None = None,
        slot: WorkerSlot | None = None,
        spread: bool = False,
    ) -> None:
        super().__init__(config)
        self.on_started = on_started
        self.slot = slot
        self.spread = spread
        self.app_state = app_state
        self.lifecycle: Lifecycle = app_state.lifecycle
        self.drain_timeout = drain_timeout
        self._drain_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.interrupted_by: int | None = None  # the signal that stopped start-up
        self.sigint = False  # stopped by SIGINT (Ctrl-C) once serving

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self._loop = asyncio.get_running_loop()
        own = None  # an HTTP worker spreading connections: a socket of its own, if it can
        if sockets and self.spread and self.slot is None:
            own = own_sockets(sockets)  # type: ignore[arg-type]
        if own is not None:  # the event loop's own listener on each worker's socket
            logger.info("HTTP worker listens on a socket of its own (SO_REUSEPORT)")
            await super().startup(sockets=list(own))
        elif sockets and (self.slot is not None or self.spread):  # gated, or one per turn
            await super().startup(sockets=[])  # the lifespan; the listeners are ours
            if self.started:
                self.servers.extend(self._listener(sock) for sock in sockets)  # type: ignore[misc]
        else:
            await super().startup(sockets=sockets)  # type: ignore[arg-type]
        if self.started and self.on_started is not None:
            self.on_started()

    def _listener(self, sock: object) -> TurnListener:
        """A listener that fills the workers in order (`app.accept_gate`) or takes one
        connection per turn (`app.listener`), with the protocol uvicorn's own listener
        would give each connection."""
        assert isinstance(sock, socket.socket)
        config = self.config

        def protocol() -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state
            )

        if self.slot is None:
            return TurnListener(sock, protocol, config.backlog)
        connections = self.server_state.connections
        return GatedListener(sock, protocol, connections, self.slot, config.backlog)

    def request_exit(self) -> None:
        """Stop now (used when the engine has died)."""
        self.should_exit = True

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.started and not self.should_exit:
            # Still starting: the engine loads, compiles and warms up inside the lifespan
            # and holds the event loop meanwhile, so a drain (or uvicorn's own exit flag)
            # would only act once start-up had finished, minutes later for a big model.
            # Stop now, as vllm serve does; vLLM shuts down the engine processes it had
            # begun to start.
            self.interrupted_by = sig
            logger.warning("%s during start-up: stopping", signal.Signals(sig).name)
            raise SystemExit(128 + sig)
        if self._drain_task is not None or self._loop is None or sig == signal.SIGINT:
            self.sigint = self.sigint or sig == signal.SIGINT
            if self._drain_task is not None:
                logger.warning("second signal: stopping without waiting for the drain")
            super().handle_exit(sig, frame)
            return
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        if self._drain_task is None:
            self._drain_task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        timeout = self.drain_timeout
        self.lifecycle.draining = True  # no new requests while the engine is asked
        # An HTTP worker's lifespan sets this probe: its way to tell "stop" from "the
        # engine is gone" on SIGTERM (its engine client can't watch the engine core).
        responds: Callable[[float], Awaitable[bool]] | None = getattr(
            self.app_state, "engine_responds", None
        )
        if (
            self.lifecycle.in_flight
            and responds is not None
            and not await responds(ENGINE_PROBE_TIMEOUT)
        ):
            logger.error("SIGTERM and the engine does not answer: ending in-flight requests")
            timeout = 0.0
        logger.info(
            "SIGTERM: draining %d in-flight request(s) for up to %.0fs",
            self.lifecycle.in_flight,
            timeout,
        )
        remaining = await self.lifecycle.drain(timeout)
        if remaining:
            logger.warning("drain timeout: aborting %d request(s)", remaining)
            for abort in list(self.lifecycle.active.values()):
                abort()
            await self.lifecycle.drain(5.0)  # let them send their error frames
        self.should_exit = True


def serve_app(
    app: FastAPI,
    settings: Settings,
    sock: socket.socket | None = None,
    on_started: Callable[[], object] | None = None,
    slot: WorkerSlot | None = None,
    spread: bool = False,
) -> int:
    """Serve `app` until SIGTERM/SIGINT (on `sock` when given; `on_started` called once
    it serves; an HTTP worker's `slot` fills the workers in order, `spread` gives it a
    listening socket of its own, or has it take one connection per turn of its loop); the
    process exit status."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        loop="uvloop",
        http="httptools",
        access_log=settings.log_level == "debug" and not settings.access_log,
        log_config=uvicorn.config.LOGGING_CONFIG if settings.log_format == "text" else None,
        timeout_graceful_shutdown=5,
        # Longer than clients' pools (aiohttp 15 s, httpx 5 s): a server that closes an idle
        # connection first races the client's next request on it.
        timeout_keep_alive=75,
    )
    server = GatewayServer(config, app.state, settings.drain_timeout, on_started, slot, spread)
    app.state.request_exit = server.request_exit
    try:
        server.run(sockets=[sock] if sock is not None else None)
    except SystemExit as exc:  # raised by handle_exit while the loop was idle during start-up
        if server.interrupted_by is None:
            if exc.code == STARTUP_FAILURE and not server.started:
                # uvicorn's start-up failure (the engine or the lifespan raised; the error
                # is logged above) exits 3, which is the engine-death status supervisors
                # restart on: a failed start exits 1 instead
                return 1
            raise
    except KeyboardInterrupt:
        # SIGINT after a clean shutdown: uvicorn raises the signal again once it has
        # stopped, and asyncio turns that into KeyboardInterrupt (uvicorn's own `run`
        # swallows it too); exit as a SIGINT stop, without a traceback.
        return 128 + signal.SIGINT
    if server.interrupted_by is not None:
        return 128 + server.interrupted_by
    if server.lifecycle.exit_code is not None:
        return int(server.lifecycle.exit_code)
    if server.sigint:
        # uvicorn's re-raised SIGINT became no KeyboardInterrupt: the process inherited
        # SIGINT ignored (started with `&` by a non-interactive shell), which uvicorn
        # restores before raising it again. Same exit status as a Ctrl-C.
        return 128 + signal.SIGINT
    return 0 if server.started else 1
