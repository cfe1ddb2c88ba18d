"""`GET /metrics`: vLLM's `vllm:*` engine metrics and the gateway's own, as Prometheus text."""

from __future__ import annotations

import os
from functools import cache

from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.responses import Response

router = APIRouter(tags=["metrics"])


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


@router.get("/metrics")
async def metrics() -> Response:
    return Response(generate_latest(scrape_registry()), media_type=CONTENT_TYPE_LATEST)
