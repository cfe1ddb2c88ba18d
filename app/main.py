"""The app factory: `create_app(settings=None, engine=None) -> FastAPI`.

Nothing is built at import time; `uvicorn --factory app.main:create_app` serves it. The
engine lives in the lifespan: started in `try`, shut down in `finally`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.chat.prepare import server_defaults
from app.engine import Engine, start_engine
from app.engine_args import build_engine_args, overrides_from_env
from app.errors import install_error_handlers
from app.metrics import gateway_metrics
from app.middleware import BodyLimitMiddleware, MetricsMiddleware, PathMiddleware
from app.model_names import ModelRegistry, ServedModel, parse_aliases
from app.model_source import ModelSource, resolve_model_source
from app.routes import chat, health, metrics, models
from app.settings import Settings
from app.state import Gateway

logger = logging.getLogger(__name__)

ROUTES = ("/v1/chat/completions", "/v1/models", "/health", "/metrics")


def build_registry(settings: Settings, engine: Engine, source: ModelSource) -> ModelRegistry:
    """The served model under its served name, with the user's aliases and spellings."""
    info = engine.info
    aliases = parse_aliases(settings.model_aliases)
    names = list(info.served_names)
    primary = names[0]
    extra = tuple(n for n in names[1:]) + tuple(aliases)
    root = source.requested if not source.demo else info.model_path
    served = ServedModel(name=primary, root=root, aliases=extra)
    also = [ServedModel(name=primary, root=info.model_path)]
    if source.hub_id:
        also.append(ServedModel(name=primary, root=source.hub_id))
    return ModelRegistry([served, *also])


async def _start(settings: Settings, source: ModelSource | None) -> tuple[Engine, ModelSource]:
    if source is None:
        source = await asyncio.to_thread(resolve_model_source, settings)
    overrides = settings.engine_overrides
    if overrides is None:
        overrides = overrides_from_env(os.environ)
    engine_args = build_engine_args(overrides, source.path)
    if source.demo and not engine_args.served_model_name:
        engine_args.served_model_name = ["qwen3-tiny-demo"]
    elif not engine_args.served_model_name:
        engine_args.served_model_name = [source.requested]
    return await start_engine(engine_args), source


def create_app(
    settings: Settings | None = None,
    engine: Engine | None = None,
    *,
    source: ModelSource | None = None,
) -> FastAPI:
    """Build the gateway app; the engine is started in the lifespan unless one is given."""
    settings = settings or Settings()
    metrics_ = gateway_metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if engine is None:
            running, loaded = await _start(settings, source)
        else:
            running = engine
            loaded = source or ModelSource(
                path=engine.info.model_path, requested=engine.info.served_names[0]
            )
        try:
            gateway = Gateway(
                settings=settings,
                engine=running,
                registry=build_registry(settings, running, loaded),
                metrics=metrics_,
                source=loaded,
                created=int(time.time()),
            )
            gateway.defaults = server_defaults(gateway)
            app.state.gateway = gateway
            yield
        finally:
            app.state.gateway = None
            if engine is None:
                running.shutdown()

    app = FastAPI(
        title="vllm-gateway",
        summary="OpenAI-compatible gateway for Qwen3 on an in-process vLLM engine.",
        version="0.1.0",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    for module in (chat, models, health, metrics):
        app.include_router(module.router)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics_, routes=ROUTES)
    app.add_middleware(PathMiddleware)
    return app
