"""`app.routes.respond.streamed`: a stream's first frame is under way before its response
is set up, and however the response ends, the stream's own cleanup runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from starlette.requests import ClientDisconnect

from app.routes.respond import streamed
from tests.unit.respond_fakes import Source, asgi_scope, never


async def test_the_first_frame_is_under_way_before_the_response_exists() -> None:
    source = Source([b"a", b"b"])
    response = await streamed(source.stream())
    assert source.events == ["submitted"]  # in flight, though nothing has been sent yet
    assert response.media_type == "text/event-stream"
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    source.release.set()
    await asyncio.wait_for(response(asgi_scope("2.4"), never, send), 5)
    assert [m.get("body") for m in sent[1:]] == [b"a", b"b", b""]
    assert source.events == ["submitted", "closed"]


async def test_the_first_frame_is_written_by_the_task_that_makes_it() -> None:
    """The engine's first output wakes one task, which makes the frame and writes it:
    by the time that task yields again, the frame is out."""
    source = Source([b"a"])
    response = await streamed(source.stream())
    sent: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message.get("body"):
            sent.append(message["body"])

    serving = asyncio.ensure_future(response(asgi_scope("2.4"), never, send))
    await asyncio.sleep(0.01)  # the headers are out, the first frame's task waits
    source.release.set()
    await asyncio.sleep(0)  # one loop turn: only the woken task runs
    assert sent == [b"a"]
    await asyncio.wait_for(serving, 5)


async def test_a_client_gone_before_the_first_frame_cancels_the_work() -> None:
    """ASGI 2.3 (uvicorn): `receive` says the client left while the engine was still on
    the first token; Starlette cancels the response, and the response the frames' task."""
    source = Source([b"a"])
    response = await streamed(source.stream())
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    serving = asyncio.ensure_future(response(asgi_scope("2.3"), receive, send))
    await asyncio.sleep(0.01)
    gone.set()
    await asyncio.wait_for(serving, 5)
    assert source.events == ["submitted", "cancelled", "closed"]


async def test_a_finished_stream_stops_listening_for_the_client() -> None:
    """ASGI 2.3 (uvicorn): the task listening on `receive` while the frames go out ends
    with the response, and the response is complete: every frame, then the body's end."""
    source = Source([b"a", b"b"])
    source.release.set()
    response = await streamed(source.stream())
    listening: list[str] = []

    async def receive() -> dict[str, Any]:
        listening.append("listening")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            listening.append("stopped")
            raise
        return {}  # pragma: no cover

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(response(asgi_scope("2.3"), receive, send), 5)
    await asyncio.sleep(0)  # the listener's cancellation is delivered
    assert [m.get("body") for m in sent[1:]] == [b"a", b"b", b""]
    assert listening == ["listening", "stopped"]
    assert source.events == ["submitted", "closed"]


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
async def test_a_failing_first_frame_raises_to_the_server(spec_version: str) -> None:
    """A failure making the first frame is the response's to raise, not lost with the
    listening task (ASGI 2.3) or the first frame's task (2.4)."""

    async def failing() -> AsyncGenerator[bytes, None]:
        raise RuntimeError("engine gone")
        yield b""  # pragma: no cover

    async def send(message: dict[str, Any]) -> None:
        pass

    response = await streamed(failing())
    with pytest.raises(RuntimeError, match="engine gone"):
        await asyncio.wait_for(response(asgi_scope(spec_version), never, send), 5)


async def test_a_client_gone_after_the_first_frame_closes_the_stream() -> None:
    """ASGI 2.4: the second frame's send fails (the client left)."""
    source = Source([b"a", b"b", b"c"])
    source.release.set()
    response = await streamed(source.stream())
    sent: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message.get("body") == b"b":
            raise OSError("connection reset")
        sent.append(message.get("body", b""))

    with pytest.raises(ClientDisconnect):
        await asyncio.wait_for(response(asgi_scope("2.4"), never, send), 5)
    assert sent == [b"", b"a"]  # the headers' message, then the first frame
    assert source.events == ["submitted", "closed"]


async def test_a_client_gone_at_once_cancels_the_work() -> None:
    """ASGI 2.3 (uvicorn): `receive` says the client left, and Starlette cancels the body."""
    source = Source([b"a"])
    response = await streamed(source.stream())
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(response(asgi_scope("2.3"), receive, send), 5)
    assert source.events == ["submitted", "cancelled", "closed"]
    assert not [m for m in sent if m.get("body")]  # no frame went out


async def test_a_client_gone_before_the_body_is_read_cancels_the_work() -> None:
    """ASGI 2.4: the headers' send fails (the client left), so the body is never iterated;
    the response itself settles the first frame's task, which would otherwise keep its
    engine request running for no one."""
    source = Source([b"a"])
    response = await streamed(source.stream())

    async def send(message: dict[str, Any]) -> None:
        raise OSError("connection reset")

    with pytest.raises(ClientDisconnect):
        await asyncio.wait_for(response(asgi_scope("2.4"), never, send), 5)
    assert source.events == ["submitted", "cancelled", "closed"]


async def test_an_empty_stream_ends_at_once() -> None:
    async def nothing() -> AsyncGenerator[bytes, None]:
        return
        yield b""  # pragma: no cover

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    response = await streamed(nothing())
    await asyncio.wait_for(response(asgi_scope("2.4"), never, send), 5)
    assert [(m["type"], m.get("more_body")) for m in sent] == [
        ("http.response.start", None),
        ("http.response.body", False),
    ]
