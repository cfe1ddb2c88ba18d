"""API keys: `Authorization: Bearer <key>`, compared in constant time."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import GatewayError

OPEN_PATHS = frozenset({"/health", "/metrics"})


def load_keys(keys: str, key_file: str | None) -> tuple[bytes, ...]:
    """Keys from a comma-separated setting and/or a file (one key per line, # comments)."""
    found = [k.strip() for k in keys.split(",") if k.strip()]
    if key_file:
        for line in Path(key_file).expanduser().read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                found.append(line)
    return tuple(dict.fromkeys(k.encode() for k in found))


def key_matches(presented: bytes, keys: Iterable[bytes]) -> bool:
    """Compare against every key (no early exit), each in constant time."""
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(presented, key)
    return matched


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> bytes | None:
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                return token.strip()
            return None
    return None


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, keys: tuple[bytes, ...], open_paths: frozenset[str]) -> None:
        self.app = app
        self.keys = keys
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope.get("headers", []))
        if token is None or not key_matches(token, self.keys):
            message = (
                "Missing API key: send `Authorization: Bearer <key>`."
                if token is None
                else "Incorrect API key provided."
            )
            error = GatewayError(
                message,
                status=401,
                code="invalid_api_key",
                headers={"WWW-Authenticate": "Bearer"},
            )
            await error.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)
