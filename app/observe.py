"""One middleware that observes each HTTP request once: its id, status and latency.

It gives the request its id (a sane incoming `X-Request-Id` or a new one, echoed in the
response and put on every log record), counts the request in the gateway's metrics by
route, method and status, times it to the last byte and, with `GATEWAY_ACCESS_LOG`,
writes its access-log line. One `send` wrapper serves all of them: it runs for every SSE
frame, so there is exactly one per request.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.access_log import Usage, log_access, usage_scope
from app.metrics import GatewayMetrics
from app.request_id import HEADER, current_request_id, pick_request_id

RESPONSE_STARTED = "response_started"  # scope["state"] flag for inner middleware

WIRE_SEND = "wire_send"
"""scope["state"] key: the `send` this middleware was given, for an SSE stream's frames
after its first (`app.routes.respond`). By then the wrappers inside have nothing left to
do for a frame: this one has taken the status and marked the first byte, Starlette's
exception senders have seen the response start, CORS its headers. Skipping them saves
three coroutine hops per token. A middleware that must see every body frame would have
to come outside this one."""


class ObserveMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        metrics: GatewayMetrics,
        routes: Iterable[str],
        access_log: bool = False,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = frozenset(routes)
        # "/v1/models/{model}": any path under "/v1/models/" is counted as that route
        self.templates = tuple((r[: r.index("{")], r) for r in self.routes if "{" in r)
        self.access_log = access_log

    def route_label(self, path: str) -> str:
        """The metrics label of a path: a known route, its template, or "other"."""
        if path in self.routes:
            return path
        for prefix, template in self.templates:
            if path.startswith(prefix) and len(path) > len(prefix):
                return template
        return "other"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = pick_request_id(scope.get("headers", []))
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state[WIRE_SEND] = send
        id_header = (HEADER, request_id.encode())
        status = 500

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                state[RESPONSE_STARTED] = True
                message = {**message, "headers": [*message.get("headers", []), id_header]}
            elif message.get("body"):
                usage.mark("first_byte")  # the first time counts
            await send(message)

        usage = Usage()
        id_token = current_request_id.set(request_id)
        usage_token = usage_scope.set(usage)
        self.metrics.in_flight.inc()
        start = usage.start
        try:
            await self.app(scope, receive, observed_send)
        except Exception:
            # answered outside this middleware, by the 500 handler (app.errors)
            usage.error_code = usage.error_code or "internal_error"
            raise
        finally:
            latency = time.perf_counter() - start
            self.metrics.in_flight.dec()
            path = scope["path"]  # already canonical: PathMiddleware runs first
            route = self.route_label(path)
            method = scope["method"]
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, method).observe(latency)
            if usage.error_code is not None:
                self.metrics.errors.labels(usage.error_code).inc()
            if self.access_log:
                log_access(request_id, method, path, status, latency, usage)
            usage_scope.reset(usage_token)
            current_request_id.reset(id_token)
