"""`GET /metrics`: vLLM's `vllm:*` engine metrics and the gateway's own, as Prometheus text,
gzipped for a scraper that accepts it (Prometheus always does), as prometheus-client's
own exporters and `vllm serve` answer."""

from __future__ import annotations

import gzip
import os
from functools import cache

import anyio
from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.responses import Response

router = APIRouter(tags=["metrics"])

GZIP_LEVEL = 6  # zlib's default: most of level 9's saving on Prometheus text, faster


@cache
def _multiprocess_registry(directory: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return registry


def scrape_registry() -> CollectorRegistry:
    """This process's registry, or with several HTTP workers (Prometheus multiprocess
    mode, `PROMETHEUS_MULTIPROC_DIR`) one that sums every worker's metrics."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return _multiprocess_registry(directory) if directory else REGISTRY


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an `Accept-Encoding` value takes gzip: named, or `*`, with a q above 0
    (`gzip;q=0` refuses it even beside `*`)."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, *params = (part.strip() for part in item.split(";"))
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if name:
            weights[name.lower()] = weight
    return weights.get("gzip", weights.get("*", 0.0)) > 0


def exposition(gzipped: bool) -> bytes:
    """The registry as Prometheus text, compressed or not."""
    body = generate_latest(scrape_registry())
    return gzip.compress(body, compresslevel=GZIP_LEVEL) if gzipped else body


@router.api_route("/metrics", methods=["GET", "HEAD"])
async def metrics(request: Request) -> Response:
    gzipped = accepts_gzip(request.headers.get("accept-encoding", ""))
    # Collecting reads every worker's metric files: off the event loop, which serves
    # streams meanwhile.
    body = await anyio.to_thread.run_sync(exposition, gzipped)
    headers = {"Vary": "Accept-Encoding"}
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return Response(body, media_type=CONTENT_TYPE_LATEST, headers=headers)
