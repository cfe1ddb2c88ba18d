"""`POST /v1/completions`: parse, prepare, call the engine layer, respond."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.completions.prepare import new_completion_id, prepare_completion
from app.completions.service import complete, stream
from app.routes.respond import request_id_of, respond
from app.schemas.completions import CompletionRequest
from app.state import GatewayDep

router = APIRouter(tags=["completions"])


@router.post("/v1/completions")
async def create_completion(
    body: CompletionRequest, gateway: GatewayDep, request: Request
) -> Response:
    job = await prepare_completion(gateway, body, new_completion_id(request_id_of(request)))
    return await respond(
        request,
        job.request_id,
        streaming=body.stream,
        stream=lambda: stream(gateway.engine, job),
        complete=lambda: complete(gateway.engine, job),
    )
