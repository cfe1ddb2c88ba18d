"""How inference routes answer: an SSE stream, or a JSON body that is abandoned (and its
engine request aborted) if the client disconnects first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import orjson
from fastapi import Request
from starlette.responses import Response, StreamingResponse

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


async def respond(
    request: Request,
    job_id: str,
    *,
    streaming: bool,
    stream: Callable[[], AsyncIterator[bytes]],
    complete: Callable[[], Awaitable[dict[str, Any]]],
) -> Response:
    if streaming:
        return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)
    try:
        result = await unless_disconnected(request, complete())
    except ClientGone:
        logger.info("client left before %s finished; engine request aborted", job_id)
        return Response(status_code=499)
    return Response(orjson.dumps(result), media_type="application/json")
