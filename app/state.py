"""The gateway's run-time state, kept on `app.state.gateway`, and its dependency alias."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from app.chat.normalize import Defaults
from app.engine import Engine
from app.errors import GatewayError
from app.lifecycle import Lifecycle
from app.metrics import GatewayMetrics
from app.model_names import ModelRegistry
from app.model_source import ModelSource
from app.settings import Settings


@dataclass
class Gateway:
    settings: Settings
    engine: Engine
    registry: ModelRegistry
    metrics: GatewayMetrics
    source: ModelSource
    lifecycle: Lifecycle = field(default_factory=lambda: Lifecycle(max_pending=1024))
    defaults: Defaults = field(default_factory=Defaults)
    created: int = 0


def get_gateway(request: Request) -> Gateway:
    gateway: Gateway | None = getattr(request.app.state, "gateway", None)
    if gateway is None:
        raise GatewayError(
            "The engine is still starting.", status=503, headers={"Retry-After": "5"}
        )
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
