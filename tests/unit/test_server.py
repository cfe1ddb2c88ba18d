"""`app.server.serve_app` on a real socket: exit statuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.lifecycle import Lifecycle
from app.server import serve_app
from app.settings import Settings


def test_a_failed_start_exits_1_not_the_engine_death_status() -> None:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        raise ValueError("model alias 'other' points to '/nonexistent'")
        yield  # pragma: no cover

    app = FastAPI(lifespan=lifespan)
    app.state.lifecycle = Lifecycle(max_pending=1)
    settings = Settings(host="127.0.0.1", port=0, engine_death_exit_code=3)
    assert serve_app(app, settings) == 1
