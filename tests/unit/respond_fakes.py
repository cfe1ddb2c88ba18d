"""Stand-ins for `app.routes.respond` tests: an engine stream and an ASGI scope."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any


class Source:
    """A stand-in for an engine stream: records when its work starts and ends."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames
        self.events: list[str] = []
        self.release = asyncio.Event()  # the "engine's first output"

    async def stream(self) -> AsyncGenerator[bytes, None]:
        self.events.append("submitted")
        try:
            await self.release.wait()
            for frame in self.frames:
                yield frame
        except asyncio.CancelledError:
            self.events.append("cancelled")
            raise
        finally:
            self.events.append("closed")


async def never() -> dict[str, Any]:  # pragma: no cover - ASGI 2.4 does not listen
    await asyncio.Event().wait()
    return {}


def asgi_scope(version: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "http", "asgi": {"spec_version": version}, "state": state or {}}
