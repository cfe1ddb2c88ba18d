"""`GET /health` (and `HEAD`, for load balancers): 200 `{"status": "healthy"}` while
serving; 503 when the engine is dead or the gateway is draining for shutdown."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

HEALTHY = b'{"status":"healthy"}'
UNHEALTHY = b'{"status":"unhealthy"}'

router = APIRouter(tags=["health"])


@router.api_route("/health", methods=["GET", "HEAD"])
async def health(request: Request) -> Response:
    gateway = getattr(request.app.state, "gateway", None)
    lifecycle = gateway.lifecycle if gateway is not None else None
    serving = lifecycle is not None and not lifecycle.draining and not lifecycle.engine_dead
    if gateway is not None and serving and await gateway.engine.check_health():
        return Response(HEALTHY, media_type="application/json")
    return Response(UNHEALTHY, status_code=503, media_type="application/json")
