"""Pure ASGI middleware: path tolerance and body size limit."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import GatewayError
from app.observe import RESPONSE_STARTED

_SLASHES = re.compile(r"/{2,}")
# `/v1/models/{model}`: what follows is a model id, which may be a path of its own
_MODEL_ID = re.compile(r"/+v1/+models/(?=.)", re.DOTALL)
_MODEL_PREFIX = "/v1/models/"


def normalize_path(path: str) -> str:
    """Collapse doubled slashes and drop a trailing one (`//v1/chat/completions/`); the
    model id of `/v1/models/{model}` is kept as sent (`/v1/models//root/Qwen3-0.6B/`)."""
    model = _MODEL_ID.match(path)
    if model is not None:
        return _MODEL_PREFIX + path[model.end() :]
    path = _SLASHES.sub("/", path)
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    return path


class PathMiddleware:
    """Routes `/v1/chat/completions/` and `//v1/...` like the canonical path (no redirect).

    It runs outermost, so every other middleware sees the canonical `scope["path"]`.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            fixed = normalize_path(path)
            if fixed != path:
                scope = dict(scope)
                scope["path"] = fixed
                scope["raw_path"] = fixed.encode()
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Request bodies the gateway reads: 413 for one over the limit, by Content-Length or
    as it streams in; 415 for a compressed one (`Content-Encoding: gzip`, ...), which it
    does not decode (before, gzip got a misleading "not valid UTF-8" 400 and `br` on a
    plain body passed unnoticed)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._reject(send)
                return
            if name == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
                await self._reject(send, _encoded(value))
                return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._error()
            return message

        try:
            await self.app(scope, counting_receive, send)
        except GatewayError as exc:
            # ObserveMiddleware (outside this one) flags a response that has begun.
            if scope.get("state", {}).get(RESPONSE_STARTED) or exc.status != 413:
                raise
            await self._reject(send)

    def _error(self) -> GatewayError:
        return GatewayError(
            f"The request body is larger than the limit of {self.max_bytes} bytes.",
            status=413,
            code="request_too_large",
        )

    async def _reject(self, send: Send, error: GatewayError | None = None) -> None:
        error = error or self._error()
        await send(
            {
                "type": "http.response.start",
                "status": error.status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": error.to_bytes()})


def _encoded(value: bytes) -> GatewayError:
    encoding = value.decode("latin-1").strip()
    return GatewayError(
        f"Compressed request bodies are not accepted (Content-Encoding: {encoding}); "
        "send the JSON uncompressed.",
        status=415,
        code="unsupported_content_encoding",
    )
