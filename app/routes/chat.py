"""`POST /v1/chat/completions`: parse, normalize, call the engine layer, respond."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.chat.prepare import new_completion_id, prepare_chat
from app.chat.service import complete, stream
from app.routes.respond import request_id_of, respond
from app.schemas.chat import ChatCompletionRequest
from app.state import GatewayDep

router = APIRouter(tags=["chat"])


@router.post("/v1/chat/completions")
async def create_chat_completion(
    body: ChatCompletionRequest, gateway: GatewayDep, request: Request
) -> Response:
    job = await prepare_chat(gateway, body, new_completion_id(request_id_of(request)))
    return await respond(
        request,
        job.request_id,
        streaming=body.stream,
        stream=lambda: stream(gateway.engine, job),
        complete=lambda: complete(gateway.engine, job),
    )
