"""`app.routes.respond.streamed`: what a stream writes, how its body ends, and what a
stream refused before its first frame becomes (one that fails there: test_respond.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from app.chat.wire import DONE_FRAME
from app.errors import GatewayError
from app.observe import WIRE_SEND
from app.routes.respond import streamed
from tests.unit.respond_fakes import Source, asgi_scope, never


async def test_a_stream_refused_before_its_first_frame_raises_its_error() -> None:
    """A GatewayError before the first frame, in the loop turn the request goes in (vLLM
    refusing a grammar): `streamed` raises it, so the client gets its status and body,
    and the stream is closed."""
    events: list[str] = []

    async def refused() -> AsyncGenerator[bytes, None]:
        try:
            raise GatewayError("bad grammar", param="response_format")
            yield b""  # pragma: no cover
        finally:
            events.append("closed")

    with pytest.raises(GatewayError, match="bad grammar") as caught:
        await streamed(refused())
    assert (caught.value.status, caught.value.param) == (400, "response_format")
    assert events == ["closed"]


async def test_a_stream_refused_once_under_way_ends_with_the_error_frame() -> None:
    """Refused after the response started (a later loop turn): the error frame and
    `[DONE]`, the body's end in the same message, under a 200 already sent."""

    async def refused_later() -> AsyncGenerator[bytes, None]:
        await asyncio.sleep(0.01)
        raise GatewayError("engine stopped", status=503)
        yield b""  # pragma: no cover

    response = await streamed(refused_later())
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(response(asgi_scope("2.4"), never, send), 5)
    assert sent[0]["status"] == 200
    (body,) = sent[1:]
    assert body["more_body"] is False
    assert body["body"].endswith(b"\n\n" + DONE_FRAME)
    error = json.loads(body["body"][len(b"data: ") : -len(b"\n\n" + DONE_FRAME)])
    assert error["error"]["message"] == "engine stopped"


async def _sent(frames: list[bytes], state: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The ASGI messages a primed stream of `frames` sends through `send` (ASGI 2.4: no
    listener), the headers' first; `state` is the scope's."""
    source = Source(frames)
    source.release.set()
    response = await streamed(source.stream())
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(response(asgi_scope("2.4", state), never, send), 5)
    assert sent[0]["type"] == "http.response.start"
    return sent[1:]


async def test_the_done_frame_ends_the_body_in_the_same_message() -> None:
    """`[DONE]` is a stream's last frame: it goes out with `more_body: False` (one write:
    the frame and the chunked encoding's end), not followed by an empty message."""
    end = b'data: {"usage": {}}\n\n' + DONE_FRAME
    sent = await _sent([b"data: 1\n\n", b"data: 2\n\n", end])
    assert [(m["body"], m["more_body"]) for m in sent] == [
        (b"data: 1\n\n", True),
        (b"data: 2\n\n", True),
        (end, False),
    ]


async def test_a_stream_without_done_still_ends_with_an_empty_message() -> None:
    sent = await _sent([b"data: 1\n\n"])
    assert [(m["body"], m["more_body"]) for m in sent] == [(b"data: 1\n\n", True), (b"", False)]


async def test_frames_after_the_first_go_past_the_inner_wrappers() -> None:
    """With the observing middleware's own `send` in the scope (`WIRE_SEND`), the headers
    and the first frame go through the wrapped `send` (status, first byte, response
    started), every later frame straight to the outer one."""
    outer: list[dict[str, Any]] = []

    async def wire(message: dict[str, Any]) -> None:
        outer.append(message)

    frames = [b"data: 1\n\n", b"data: 2\n\n", DONE_FRAME]
    wrapped = await _sent(frames, {WIRE_SEND: wire})
    assert [(m["body"], m["more_body"]) for m in wrapped] == [(b"data: 1\n\n", True)]
    assert [(m["body"], m["more_body"]) for m in outer] == [
        (b"data: 2\n\n", True),
        (DONE_FRAME, False),
    ]
