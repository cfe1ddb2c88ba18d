"""Admission control: bound the inference requests inside the gateway.

Past `max_pending_requests`, while draining, or once the engine is dead, an inference
request gets 503 with `Retry-After` at once, without touching the engine.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import GatewayError
from app.lifecycle import Lifecycle

INFERENCE_ROUTES = frozenset({"/v1/chat/completions", "/v1/completions"})

_MESSAGES = {
    "overloaded": ("The server is at its limit of {limit} pending requests; retry shortly.", "1"),
    "shutting_down": ("The server is shutting down and takes no new requests.", "5"),
    "engine_dead": ("The inference engine has stopped; the server is restarting.", "5"),
}
_CODES = {
    "overloaded": "server_overloaded",
    "shutting_down": "server_shutting_down",
    "engine_dead": "engine_dead",
}


class AdmissionMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.limit = Gauge(
            "gateway_max_pending_requests",
            "Limit on inference requests inside the gateway (admission control).",
            registry=registry,
            multiprocess_mode="livemax",  # one limit, shared by the HTTP workers
        )
        self.pending = Gauge(
            "gateway_pending_requests",
            "Inference requests inside the gateway now.",
            registry=registry,
            multiprocess_mode="livesum",  # summed over HTTP workers
        )
        self.rejected = Counter(
            "gateway_rejected_requests",
            "Inference requests turned away with 503, by reason.",
            ["reason"],
            registry=registry,
        )


_metrics: dict[int, AdmissionMetrics] = {}


def admission_metrics(registry: CollectorRegistry = REGISTRY) -> AdmissionMetrics:
    """One set of admission metrics per registry."""
    found = _metrics.get(id(registry))
    if found is None:
        found = _metrics[id(registry)] = AdmissionMetrics(registry)
    return found


def rejection(reason: str, limit: int) -> GatewayError:
    message, retry_after = _MESSAGES[reason]
    return GatewayError(
        message.format(limit=limit),
        status=503,
        code=_CODES[reason],
        headers={"Retry-After": retry_after},
    )


class AdmissionMiddleware:
    def __init__(self, app: ASGIApp, lifecycle: Lifecycle, metrics: AdmissionMetrics) -> None:
        self.app = app
        self.lifecycle = lifecycle
        self.metrics = metrics
        metrics.limit.set(lifecycle.max_pending)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in INFERENCE_ROUTES:
            await self.app(scope, receive, send)
            return
        reason = self.lifecycle.admit()
        if reason is not None:
            self.metrics.rejected.labels(reason).inc()
            await rejection(reason, self.lifecycle.max_pending).response()(scope, receive, send)
            return
        self.metrics.pending.inc()
        try:
            await self.app(scope, receive, send)
        finally:
            self.metrics.pending.dec()
            self.lifecycle.release()
