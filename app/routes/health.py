"""`GET /health`: 200 `{"status": "healthy"}` while the engine is healthy, else 503."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

HEALTHY = b'{"status":"healthy"}'
UNHEALTHY = b'{"status":"unhealthy"}'

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(request: Request) -> Response:
    gateway = getattr(request.app.state, "gateway", None)
    if gateway is not None and await gateway.engine.check_health():
        return Response(HEALTHY, media_type="application/json")
    return Response(UNHEALTHY, status_code=503, media_type="application/json")
