"""`GET /v1/models` and `GET /v1/models/{model}`: the served model, its aliases, where it
was loaded from. `HEAD` answers both with the headers alone (probes, link checkers)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from app.model_names import ServedModel
from app.model_source import DEMO_WARNING
from app.state import Gateway, GatewayDep

router = APIRouter(tags=["models"])


def model_entry(gateway: Gateway, model: ServedModel, name: str) -> dict[str, Any]:
    """OpenAI's `Model` object for one name of a served model (vLLM's extra fields too)."""
    entry: dict[str, Any] = {
        "id": name,
        "object": "model",
        "created": gateway.created,
        "owned_by": "vllm-gateway",
        "root": model.root,
        "parent": None if name == model.name else model.name,
        "max_model_len": gateway.engine.info.max_model_len,
    }
    if gateway.source.demo:
        entry["warning"] = DEMO_WARNING
    return entry


def listed_names(gateway: Gateway) -> list[tuple[ServedModel, str]]:
    """Every name `/v1/models` lists, with its model, first spelling first."""
    listed: list[tuple[ServedModel, str]] = []
    seen: set[str] = set()
    for model in gateway.registry.models:
        for name in (model.name, *model.aliases):
            if name not in seen:
                seen.add(name)
                listed.append((model, name))
    return listed


@router.api_route("/v1/models", methods=["GET", "HEAD"])
async def list_models(gateway: GatewayDep) -> Response:
    data = [model_entry(gateway, model, name) for model, name in listed_names(gateway)]
    return Response(orjson.dumps({"object": "list", "data": data}), media_type="application/json")


@router.api_route("/v1/models/{model:path}", methods=["GET", "HEAD"])
async def retrieve_model(model: str, gateway: GatewayDep) -> Response:
    """A listed name gives its own entry; any other spelling the chat endpoint accepts (an
    alias, `Qwen/Qwen3-0.6B`, a path with `~` or a trailing slash) gives the served name's
    entry. An unknown or blank name is the chat endpoint's 404."""
    listed = {name: served for served, name in listed_names(gateway)}
    if model not in listed:
        model = gateway.served_model(model, blank_is_default=False).name
    entry = model_entry(gateway, listed[model], model)
    return Response(orjson.dumps(entry), media_type="application/json")
