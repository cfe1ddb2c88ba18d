"""`POST /v1/chat/completions`: parse, normalize, call the engine layer, respond."""

from __future__ import annotations

import orjson
from fastapi import APIRouter
from starlette.responses import Response, StreamingResponse

from app.chat.prepare import new_completion_id, prepare_chat
from app.chat.service import complete, stream
from app.schemas.chat import ChatCompletionRequest
from app.state import GatewayDep

router = APIRouter(tags=["chat"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@router.post("/v1/chat/completions")
async def create_chat_completion(body: ChatCompletionRequest, gateway: GatewayDep) -> Response:
    job = prepare_chat(gateway, body, new_completion_id())
    if body.stream:
        return StreamingResponse(
            stream(gateway.engine, job), media_type="text/event-stream", headers=SSE_HEADERS
        )
    result = await complete(gateway.engine, job)
    return Response(orjson.dumps(result), media_type="application/json")
