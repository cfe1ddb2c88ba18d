"""`app.routes.respond.started`: a stream's first frame is under way before its response
is set up, and closing the stream early still runs the stream's own cleanup."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from app.routes.respond import started


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


async def test_the_first_frame_is_under_way_before_started_returns() -> None:
    source = Source([b"a", b"b"])
    frames = await started(source.stream())
    assert source.events == ["submitted"]  # in flight, though nothing has iterated yet
    source.release.set()
    assert [f async for f in frames] == [b"a", b"b"]
    assert source.events == ["submitted", "closed"]


async def test_closing_before_the_first_frame_cancels_the_work() -> None:
    source = Source([b"a"])
    frames = await started(source.stream())
    consumer = asyncio.ensure_future(frames.__anext__())
    await asyncio.sleep(0.01)
    consumer.cancel()  # the client left while the engine was still on the first token
    await asyncio.gather(consumer, return_exceptions=True)
    assert source.events == ["submitted", "cancelled", "closed"]


async def test_closing_after_the_first_frame_closes_the_stream() -> None:
    source = Source([b"a", b"b", b"c"])
    source.release.set()
    frames = await started(source.stream())
    assert await frames.__anext__() == b"a"
    await frames.aclose()  # type: ignore[attr-defined]
    assert source.events == ["submitted", "closed"]


async def test_an_empty_stream_ends_at_once() -> None:
    async def nothing() -> AsyncGenerator[bytes, None]:
        return
        yield b""  # pragma: no cover

    frames = await started(nothing())
    assert [f async for f in frames] == []


async def test_a_failing_first_frame_raises_to_the_consumer() -> None:
    async def failing() -> AsyncGenerator[bytes, None]:
        raise RuntimeError("engine gone")
        yield b""  # pragma: no cover

    frames = await started(failing())
    with pytest.raises(RuntimeError, match="engine gone"):
        await frames.__anext__()
