"""`POST /v1/chat/completions`: parse, normalize, call the engine layer, respond."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response, StreamingResponse

from app.chat.prepare import new_completion_id, prepare_chat
from app.chat.service import complete, stream
from app.schemas.chat import ChatCompletionRequest
from app.state import GatewayDep

logger = logging.getLogger(__name__)
router = APIRouter(tags=["chat"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection before the answer was ready."""


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


@router.post("/v1/chat/completions")
async def create_chat_completion(
    body: ChatCompletionRequest, gateway: GatewayDep, request: Request
) -> Response:
    request_id = request.scope.get("state", {}).get("request_id")
    job = prepare_chat(gateway, body, new_completion_id(request_id))
    if body.stream:
        return StreamingResponse(
            stream(gateway.engine, job), media_type="text/event-stream", headers=SSE_HEADERS
        )
    try:
        result = await unless_disconnected(request, complete(gateway.engine, job))
    except ClientGone:
        logger.info("client left before %s finished; engine request aborted", job.request_id)
        return Response(status_code=499)
    return Response(orjson.dumps(result), media_type="application/json")
