"""The app factory: `create_app(settings=None, engine=None) -> FastAPI`.

Nothing is built at import time; `uvicorn --factory app.main:create_app` serves it. The
engine lives in the lifespan: started in `try`, shut down in `finally`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app import fast_encode
from app.admission import AdmissionMiddleware, admission_metrics
from app.auth import OPEN_PATHS, ApiKeyMiddleware, load_keys
from app.chat.prepare import server_defaults
from app.cpu_kv_cache import size_cpu_kv_cache
from app.engine import Engine, device_type, start_engine
from app.engine_args import build_engine_args, overrides_from_env
from app.errors import install_error_handlers
from app.heap import trim_after_start
from app.lifecycle import Lifecycle
from app.metrics import gateway_metrics
from app.middleware import BodyLimitMiddleware, PathMiddleware
from app.model_names import ModelRegistry, ServedModel, check_alias_targets, parse_aliases
from app.model_source import ModelSource, resolve_model_source
from app.observe import ObserveMiddleware
from app.routes import chat, completions, health, metrics, models, tokenize
from app.settings import Settings
from app.shared_pending import SharedPending
from app.state import Gateway
from app.warmup import warm_up

if TYPE_CHECKING:
    from vllm.engine.arg_utils import AsyncEngineArgs

logger = logging.getLogger(__name__)

ROUTES = (
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/models",
    "/v1/models/{model}",
    "/tokenize",
    "/detokenize",
    "/version",
    "/health",
    "/metrics",
)


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
    check_alias_targets(aliases, ModelRegistry([ServedModel(primary, root), *also]))
    return ModelRegistry([served, *also])


def gateway_engine_args(settings: Settings, source: ModelSource) -> AsyncEngineArgs:
    """The engine options for `source`: the user's, the served name clients see and, on a
    CPU the user left unsized, a KV cache sized for the model (`app.cpu_kv_cache`)."""
    overrides = settings.engine_overrides
    if overrides is None:
        overrides = overrides_from_env(os.environ)
    engine_args = build_engine_args(overrides, source.path)
    if source.demo and not engine_args.served_model_name:
        engine_args.served_model_name = ["qwen3-tiny-demo"]
    elif not engine_args.served_model_name:
        engine_args.served_model_name = [source.requested]
    size_cpu_kv_cache(engine_args, os.environ)
    return engine_args


async def _start(
    settings: Settings, source: ModelSource | None, client_config: dict[str, Any] | None
) -> tuple[Engine, ModelSource]:
    if source is None:
        source = await asyncio.to_thread(resolve_model_source, settings)
    engine_args = gateway_engine_args(settings, source)
    return await start_engine(engine_args, client_config), source


async def watch_engine(
    app: FastAPI, engine: Engine, lifecycle: Lifecycle, settings: Settings
) -> None:
    """Notice engine death within a second: /health turns 503, new requests get 503,
    in-flight ones get their errors, then the process exits non-zero (if configured)."""
    while engine.healthy:
        await asyncio.sleep(0.25)
    lifecycle.engine_dead = True
    logger.error("the inference engine died; answering 503 from now on")
    if not settings.exit_on_engine_death:
        return
    await asyncio.sleep(1.0)  # let in-flight requests send their error frames
    lifecycle.exit_code = settings.engine_death_exit_code
    request_exit = getattr(app.state, "request_exit", None)
    if request_exit is not None:
        request_exit()
    else:  # served by plain uvicorn: ask it to stop
        os.kill(os.getpid(), signal.SIGTERM)


def create_app(
    settings: Settings | None = None,
    engine: Engine | None = None,
    *,
    source: ModelSource | None = None,
    client_config: dict[str, Any] | None = None,
    shared_pending: SharedPending | None = None,
) -> FastAPI:
    """Build the gateway app; the engine is started in the lifespan unless one is given.

    `client_config` makes this app one HTTP worker of several sharing an engine core,
    `shared_pending` their common admission count (see `app.workers`)."""
    settings = settings or Settings()
    metrics_ = gateway_metrics()
    lifecycle = Lifecycle(max_pending=settings.max_pending_requests, shared=shared_pending)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if engine is None:
            running, loaded = await _start(settings, source, client_config)
        else:
            running = engine
            loaded = source or ModelSource(
                path=engine.info.model_path, requested=engine.info.served_names[0]
            )
        watchdog: asyncio.Task[None] | None = None
        try:
            gateway = Gateway(
                settings=settings,
                engine=running,
                registry=build_registry(settings, running, loaded),
                metrics=metrics_,
                source=loaded,
                lifecycle=lifecycle,
                created=int(time.time()),
            )
            gateway.defaults = server_defaults(gateway)
            # on this thread, which encodes the prompts later: fastokens' state is per thread
            encoder = fast_encode.choose(running.tokenizer, settings.fast_tokenizer, device_type())
            logger.info("prompts encoded by %s", encoder)
            if settings.warmup:
                await warm_up(gateway)
            app.state.gateway = gateway
            if client_config is not None:  # one of several HTTP workers
                app.state.engine_responds = running.responds
            # Like vllm serve: keep start-up objects out of the collector, or a full
            # collection of ~600k of them stalls every stream for ~0.3 s under load.
            gc.collect()
            gc.freeze()
            trim_after_start()  # what loading the tokenizers left free, back to the system
            watchdog = asyncio.create_task(watch_engine(app, running, lifecycle, settings))
            yield
        finally:
            if watchdog is not None:
                watchdog.cancel()
            app.state.gateway = None
            if engine is None:
                running.shutdown()

    app = FastAPI(
        title="vllm-gateway",
        summary="OpenAI-compatible gateway for Qwen3 on an in-process vLLM engine.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.lifecycle = lifecycle
    install_error_handlers(app)
    for module in (chat, completions, tokenize, models, health, metrics):
        app.include_router(module.router)
    # Starlette runs the last-added middleware first: this list is innermost first.
    app.add_middleware(AdmissionMiddleware, lifecycle=lifecycle, metrics=admission_metrics())
    keys = load_keys(settings.api_key, settings.api_key_file)
    if keys:
        open_paths = frozenset() if settings.protect_health_and_metrics else OPEN_PATHS
        app.add_middleware(ApiKeyMiddleware, keys=keys, open_paths=open_paths)
    origins = [o.strip() for o in settings.cors_allow_origins.split(",") if o.strip()]
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["X-Request-Id"],
        )
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(
        ObserveMiddleware, metrics=metrics_, routes=ROUTES, access_log=settings.access_log
    )
    app.add_middleware(PathMiddleware)
    return app
