"""How inference routes answer: an SSE stream, or a JSON body that is abandoned (and its
engine request aborted) if the client disconnects first.

A stream's engine request is submitted before the response's headers go out: the first
frame is set in motion as its own task, which runs up to its wait for the engine's first
output, and only then does the HTTP layer write the headers, so the engine prefills while
the response is set up instead of after it. On the H200, side by side with the version
before, that was 0.1-0.5 ms less between a request's arrival and its prefill (paired
medians; docs/benchmarks/profiling.md, "Session 16").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import orjson
from fastapi import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from app.chat.wire import DONE_FRAME
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


async def until_disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Await `work`, cancelling it (which aborts the engine request) if the client leaves."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(until_disconnected(request))
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
    """The SSE response for `frames`, its first frame already in the making: when this
    returns, the first frame's task has run up to its first wait (for a stream, the
    engine's first output), so the engine request is in."""
    first = asyncio.ensure_future(anext(frames))
    await asyncio.sleep(0)  # one loop turn: the task runs up to its first wait
    return _PrimedStream(first, frames)


class _PrimedStream(StreamingResponse):
    """A StreamingResponse that settles its first frame's task however the response ends:
    a client gone before the body was iterated would otherwise leave that task (and its
    engine request) running for no one."""

    def __init__(self, first: asyncio.Future[bytes], frames: AsyncGenerator[bytes, None]) -> None:
        super().__init__(_after(first, frames), media_type="text/event-stream", headers=SSE_HEADERS)
        self.first = first
        self.frames = frames
        self.wire_send: Send | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.wire_send = scope.get("state", {}).get(WIRE_SEND)
        try:
            await super().__call__(scope, receive, send)
        finally:
            await _settle(self.first, self.frames)

    async def stream_response(self, send: Send) -> None:
        """Starlette's, but the frame that ends the stream (`[DONE]`, always the last) ends
        the body too, so the server writes it and the chunked encoding's end at once; and
        the frames after the first go to the `send` the observing middleware was given
        (`app.observe.WIRE_SEND`), past the wrappers inside it."""
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        ended = False
        out, later = send, self.wire_send or send
        async for chunk in self.body_iterator:
            body = chunk.encode(self.charset) if isinstance(chunk, str) else bytes(chunk)
            ended = body.endswith(DONE_FRAME)
            await out({"type": "http.response.body", "body": body, "more_body": not ended})
            out = later
        if not ended:
            await out({"type": "http.response.body", "body": b"", "more_body": False})


async def _after(
    first: asyncio.Future[bytes], frames: AsyncGenerator[bytes, None]
) -> AsyncIterator[bytes]:
    try:
        try:
            frame = await first
        except StopAsyncIteration:
            return
        yield frame
        async for frame in frames:
            yield frame
    finally:
        await _settle(first, frames)


async def _settle(first: asyncio.Future[bytes], frames: AsyncGenerator[bytes, None]) -> None:
    """Cancel the first frame's task if it is still waiting (the client left before it),
    then close the stream, which runs its own cleanup (it aborts an unfinished request)."""
    if not first.done():
        first.cancel()
        await asyncio.wait({first})
    if not first.cancelled():
        first.exception()  # seen: a failure there is the stream's to report, not the loop's
    await frames.aclose()


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
