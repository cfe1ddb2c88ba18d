"""How inference routes answer: an SSE stream, or a JSON body that is abandoned (and its
engine request aborted) if the client disconnects first.

A stream's engine request is submitted before the response's headers go out: its frames
are made and written by a task of its own, set in motion first, which runs up to its wait
for the engine's first output, and only then does the HTTP layer write the headers, so
the engine prefills while the response is set up instead of after it. On the H200, side
by side with the version before, that was 0.1-0.5 ms less between a request's arrival and
its prefill (paired medians; docs/benchmarks/profiling.md, "Session 16").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import orjson
from fastapi import Request
from starlette.requests import ClientDisconnect
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from app.chat.wire import DONE_FRAME
from app.engine_errors import error_frame
from app.errors import GatewayError
from app.observe import WIRE_SEND

logger = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection before the answer was ready."""


def request_id_of(request: Request) -> str | None:
    """The id RequestIdMiddleware chose for this request."""
    value = request.scope.get("state", {}).get("request_id")
    return value if isinstance(value, str) else None


async def until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Await `work`, cancelling it (which aborts the engine request) if the client leaves."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(until_disconnected(request.receive))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise ClientGone


async def streamed(frames: AsyncGenerator[bytes, None]) -> StreamingResponse:
    """The SSE response for `frames`, already under way: when this returns, the task that
    makes and writes the frames (`_Pump`) has run up to its first wait (for a stream, the
    engine's first output), so the engine request is in.

    `frames` raises a GatewayError where the request is refused before its first frame
    (vLLM checks a request as it takes it in, in that same loop turn): the error is then
    raised here, and the client gets its status (400 for a grammar vLLM refused, 503 for
    a stopped engine) and the error body, as OpenAI's API answers, not a 200 stream
    holding only an error. One refused later, the response under way, ends its stream
    with the error frame and `[DONE]`."""
    pump = _Pump(frames)
    await asyncio.sleep(0)  # one loop turn: the task runs up to its first wait
    if pump.refused is not None:
        await pump.settle()
        raise pump.refused
    return _PrimedStream(pump)


class _Pump:
    """One task that makes a stream's frames and writes each as soon as it is made, the
    first once the response has started (its headers out): an engine output wakes this
    one task, not one that makes the frame and then another that writes it, which woke
    only after every other handler the same engine step had woken (profiling.md, "Session
    39"). The frame that ends the stream (`[DONE]`, always the last) ends the body too, so
    the server writes it and the chunked encoding's end at once."""

    def __init__(self, frames: AsyncGenerator[bytes, None]) -> None:
        self.frames = frames
        self.writers: asyncio.Future[tuple[Send, Send]] = asyncio.get_running_loop().create_future()
        self.refused: GatewayError | None = None  # what `frames` raised before its first
        self.task = asyncio.ensure_future(self._run())

    def start(self, first: Send, later: Send) -> None:
        """The response has started: the first frame goes to `first`, the rest to `later`."""
        self.writers.set_result((first, later))

    async def _run(self) -> None:
        try:
            frame = await anext(self.frames, None)
        except GatewayError as exc:
            self.refused = exc
            frame = error_frame(exc) + DONE_FRAME
        out, later = await self.writers
        ended = False
        while frame is not None:
            ended = frame.endswith(DONE_FRAME)
            await out({"type": "http.response.body", "body": frame, "more_body": not ended})
            out = later
            frame = await anext(self.frames, None)
        if not ended:
            await out({"type": "http.response.body", "body": b"", "more_body": False})

    async def settle(self) -> None:
        """Cancel the task if it is still going (the client left, or the response never
        started), then close the stream, which runs its own cleanup (it aborts an
        unfinished request)."""
        if not self.task.done():
            self.task.cancel()
            await asyncio.wait({self.task})
        if not self.task.cancelled():
            self.task.exception()  # seen: a failure there is the response's to report
        await self.frames.aclose()


async def _no_body() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - an async generator that yields nothing


class _PrimedStream(StreamingResponse):
    """A StreamingResponse whose body `_Pump` writes: the response sends the headers,
    hands the pump its `send`s and waits for it; however the response ends, the pump is
    settled (a client gone before the body was written would otherwise leave it, and its
    engine request, running for no one)."""

    def __init__(self, pump: _Pump) -> None:
        super().__init__(_no_body(), media_type="text/event-stream", headers=SSE_HEADERS)
        self.pump = pump
        self.wire_send: Send | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream, then settle the pump. Under ASGI 2.4 a failed `send` says the client
        left; under 2.3 (uvicorn) `send` says nothing then, so a task of its own listens on
        `receive` and cancels the pump at a disconnect. (Starlette's StreamingResponse
        listens through an anyio task group: a cancel scope, a task and the task's repr
        built at each request's end.)"""
        self.wire_send = scope.get("state", {}).get(WIRE_SEND)
        try:
            if _spec_version(scope) >= (2, 4):
                try:
                    await self.stream_response(send)
                except OSError:
                    raise ClientDisconnect() from None
            else:
                watcher = asyncio.ensure_future(self._cancel_at_disconnect(receive))
                try:
                    await self.stream_response(send)
                finally:
                    watcher.cancel()
        finally:
            await self.pump.settle()

    async def _cancel_at_disconnect(self, receive: Receive) -> None:
        await until_disconnected(receive)
        self.pump.task.cancel()

    async def stream_response(self, send: Send) -> None:
        """The headers, then the pump's frames: the first through `send`, the later ones
        to the `send` the observing middleware was given (`app.observe.WIRE_SEND`), past
        the wrappers inside it. Returns when the pump is done or was cancelled (the client
        left); raises what the pump raised."""
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        self.pump.start(send, self.wire_send or send)
        await asyncio.wait({self.pump.task})
        if not self.pump.task.cancelled():
            self.pump.task.result()


def _spec_version(scope: Scope) -> tuple[int, ...]:
    """The ASGI spec version the server speaks ("2.0" where it does not say)."""
    return tuple(map(int, scope.get("asgi", {}).get("spec_version", "2.0").split(".")))


async def respond(
    request: Request,
    job_id: str,
    *,
    streaming: bool,
    stream: Callable[[], AsyncGenerator[bytes, None]],
    complete: Callable[[], Awaitable[dict[str, Any]]],
) -> Response:
    if streaming:
        return await streamed(stream())
    try:
        result = await unless_disconnected(request, complete())
    except ClientGone:
        logger.info("client left before %s finished; engine request aborted", job_id)
        return Response(status_code=499)
    return Response(orjson.dumps(result), media_type="application/json")
