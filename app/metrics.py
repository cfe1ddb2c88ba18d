"""The gateway's own Prometheus metrics (vLLM's `vllm:*` ones share the registry)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass(frozen=True)
class GatewayMetrics:
    requests: Counter
    latency: Histogram
    in_flight: Gauge
    normalizations: Counter
    errors: Counter
    turn_tokens: Counter

    def count_turn_tokens(self, remembered: int, encoded: int) -> None:
        """A long prompt's tokens, by where their ids came from (`app.encode`)."""
        for source, count in zip(TURN_SOURCES, (remembered, encoded), strict=True):
            if count:
                self.turn_tokens.labels(source).inc(count)


NORMALIZATION_KINDS = (
    "system_message",
    "sampling_defaults",
    "invisible_chars",
    "system_order",
    "thinking_flag",
    "extra_body",
    "constrained_thinking",
    "allowed_tools",
)
"""Every `kind` of `gateway_normalizations_total` (app.chat.normalize, app.completions)."""

TURN_SOURCES = ("remembered", "encoded")
"""Every `source` of `gateway_prompt_turn_tokens_total` (app.encode's conversation turns)."""

COMMON_ERROR_CODES = (
    "invalid_request",
    "invalid_json",
    "model_not_found",
    "context_length_exceeded",
    "invalid_api_key",
    "not_found",
    "request_too_large",
    "server_overloaded",
    "server_shutting_down",
    "engine_dead",
    "engine_error",
    "internal_error",
)
"""`gateway_errors_total` codes exported at 0 from the start (others appear when sent):
Prometheus' rate() then counts each one's first error, and a dashboard has the series
before there is one, also with several HTTP workers, whose multiprocess collector shows
no family that has no samples."""


@cache
def gateway_metrics(registry: CollectorRegistry = REGISTRY) -> GatewayMetrics:
    """Create (once per registry) and return the gateway's metrics."""
    metrics = GatewayMetrics(
        requests=Counter(
            "gateway_requests",
            "HTTP requests answered by the gateway, by route, method and status.",
            ["route", "method", "status"],
            registry=registry,
        ),
        latency=Histogram(
            "gateway_request_duration_seconds",
            "Time from request to the last byte of the response, by route.",
            ["route", "method"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        in_flight=Gauge(
            "gateway_requests_in_flight",
            "Requests being answered by the gateway now.",
            registry=registry,
            multiprocess_mode="livesum",  # summed over HTTP workers
        ),
        normalizations=Counter(
            "gateway_normalizations",
            "Request normalizations applied, by kind.",
            ["kind"],
            registry=registry,
        ),
        errors=Counter(
            "gateway_errors",
            "Error responses sent, by code.",
            ["code"],
            registry=registry,
        ),
        turn_tokens=Counter(
            "gateway_prompt_turn_tokens",
            "Tokens of prompts split at their special tokens (800+ characters), by where "
            "their ids came from: this process's cache of earlier turns, or encoded now.",
            ["source"],
            registry=registry,
        ),
    )
    for source in TURN_SOURCES:
        metrics.turn_tokens.labels(source)
    for kind in NORMALIZATION_KINDS:
        metrics.normalizations.labels(kind)
    for code in COMMON_ERROR_CODES:
        metrics.errors.labels(code)
    return metrics
