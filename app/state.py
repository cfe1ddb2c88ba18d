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
from app.model_names import ModelRegistry, ServedModel
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

    def served_model(self, requested: str | None, *, blank_is_default: bool = True) -> ServedModel:
        """The model a request names (any accepted spelling; none or a blank one: the
        default, unless `blank_is_default` is false); 404 listing the valid names."""
        named = blank_is_default or (requested is not None and requested.strip())
        served = self.registry.resolve(requested) if named else None
        if served is None:
            names = ", ".join(self.registry.valid_names())
            raise GatewayError(
                f"The model `{requested}` does not exist. Valid names: {names}.",
                status=404,
                param="model",
                code="model_not_found",
            )
        return served


async def get_gateway(request: Request) -> Gateway:
    """The running gateway (async: FastAPI runs a plain `def` dependency in its thread
    pool, one thread hop per request)."""
    gateway: Gateway | None = getattr(request.app.state, "gateway", None)
    if gateway is None:
        raise GatewayError(
            "The engine is still starting.", status=503, headers={"Retry-After": "5"}
        )
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
