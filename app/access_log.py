"""One access-log line per request (`GATEWAY_ACCESS_LOG=true`), on the `app.access` logger.

The line carries the request id, method, route, status, latency and, where the chat path
reported them through `record_usage`, the prompt and completion token counts; with
`GATEWAY_LOG_FORMAT=json` they become fields of the JSON object.
"""

from __future__ import annotations

import contextvars
import logging
import time
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("app.access")


@dataclass
class Usage:
    """Token counts of the current request, filled in by whoever knows them."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


_usage: contextvars.ContextVar[Usage | None] = contextvars.ContextVar(
    "access_log_usage", default=None
)


def record_usage(prompt_tokens: int, completion_tokens: int) -> None:
    """Note the current request's token counts for its access-log line (no-op outside one)."""
    usage = _usage.get()
    if usage is not None:
        usage.prompt_tokens = prompt_tokens
        usage.completion_tokens = completion_tokens


class AccessLogMiddleware:
    """Logs each HTTP request once its response is finished (or has failed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        usage = Usage()
        token = _usage.set(usage)
        start = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            _usage.reset(token)
            _log(scope, status, time.perf_counter() - start, usage)


def _log(scope: Scope, status: int, latency: float, usage: Usage) -> None:
    route = scope["path"][:256]  # already canonical: PathMiddleware runs first
    method = scope["method"]
    fields = {
        "request_id": scope.get("state", {}).get("request_id"),
        "method": method,
        "route": route,
        "status": status,
        "latency_s": round(latency, 6),
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }
    tokens = ""
    if usage.prompt_tokens is not None:
        tokens = f" tokens={usage.prompt_tokens}+{usage.completion_tokens}"
    logger.info("%s %s %d %.3fs%s", method, route, status, latency, tokens, extra=fields)
