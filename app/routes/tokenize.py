"""`POST /tokenize`, `POST /detokenize` and `GET /version`, as `vllm serve` has them."""

from __future__ import annotations

import functools

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from app.schemas.completions import DetokenizeRequest, TokenizeRequest
from app.state import GatewayDep
from app.tokenization import detokenize, tokenize

router = APIRouter(tags=["tokenize"])


def _json(body: object) -> Response:
    return Response(orjson.dumps(body), media_type="application/json")


@router.post("/tokenize")
async def tokenize_route(body: TokenizeRequest, gateway: GatewayDep) -> Response:
    return _json(tokenize(gateway, body))


@router.post("/detokenize")
async def detokenize_route(body: DetokenizeRequest, gateway: GatewayDep) -> Response:
    return _json(detokenize(gateway, body))


@functools.cache
def vllm_version() -> str:
    from vllm import __version__

    return str(__version__)


@router.get("/version")
async def version(request: Request) -> Response:
    """`{"version": <vLLM's version>}` as `vllm serve` answers, plus the gateway's own."""
    return _json({"version": vllm_version(), "gateway_version": request.app.version})
