"""`GET /v1/models`: the served model, its aliases, where it was loaded from."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from app.model_source import DEMO_WARNING
from app.state import GatewayDep

router = APIRouter(tags=["models"])


@router.get("/v1/models")
async def list_models(gateway: GatewayDep) -> Response:
    info = gateway.engine.info
    data: list[dict[str, Any]] = []
    seen: set[str] = set()
    for model in gateway.registry.models:
        for name in (model.name, *model.aliases):
            if name in seen:
                continue
            seen.add(name)
            entry: dict[str, Any] = {
                "id": name,
                "object": "model",
                "created": gateway.created,
                "owned_by": "vllm-gateway",
                "root": model.root,
                "parent": None if name == model.name else model.name,
                "max_model_len": info.max_model_len,
            }
            if gateway.source.demo:
                entry["warning"] = DEMO_WARNING
            data.append(entry)
    body = orjson.dumps({"object": "list", "data": data})
    return Response(body, media_type="application/json")
