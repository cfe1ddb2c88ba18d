"""One access-log line per request (`GATEWAY_ACCESS_LOG=true`), on the `app.access` logger.

`app.observe.ObserveMiddleware` writes the line when the response is finished (or failed).

The line carries the request id, method, route, status, latency and, where the chat path
reported them through `record_usage`, the prompt and completion token counts; with
`GATEWAY_LOG_FORMAT=json` they become fields of the JSON object. Where a request reached
them, it also carries when (milliseconds since the request reached the app; `record_mark`)
its prompt was ready for the engine (`prompt_ms`), the engine's first output came
(`first_output_ms`) and its first response bytes went to the server (`first_byte_ms`):
time to first token, split into the gateway's preparation, the engine and the way out.
Where vLLM timed the request's way through its engine core (`RequestOutput.metrics`), the
line also says when the engine core queued it (`queued_ms`), first scheduled it
(`scheduled_ms`) and made its first token (`first_token_ms`), and when this process's
engine client took in that token (`received_ms`, where vLLM's time to first token ends):
`record_engine_marks`.
"""

from __future__ import annotations

import contextvars
import logging
import time
from dataclasses import dataclass, field

logger = logging.getLogger("app.access")


@dataclass
class Usage:
    """Token counts and error code of the current request, filled in by whoever knows them."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error_code: str | None = None  # the last error body sent (whole or as a stream frame)
    start: float = field(default_factory=time.perf_counter)  # when the request reached the app
    marks: dict[str, float] = field(default_factory=dict)  # MARKS: ms since start, first time

    def mark(self, name: str) -> None:
        """Note that the request reached point `name` now (the first time counts)."""
        if name not in self.marks:
            self.marks[name] = (time.perf_counter() - self.start) * 1000


MARKS = (
    "prompt",
    "queued",
    "scheduled",
    "first_token",
    "received",
    "first_output",
    "first_byte",
)
"""The points along a request that its line reports, in the order a request reaches them."""

ENGINE_MARKS = {"queued": "queued_ts", "scheduled": "scheduled_ts", "first_token": "first_token_ts"}
"""The marks the engine core times, by the field of vLLM's `RequestStateStats` that holds
each (the engine core's `time.monotonic()`, the clock of `Usage.start` too)."""

RECEIVED = "received"
"""The mark of when this process's engine client took in the request's first token:
vLLM's `arrival_time + first_token_latency` (wall clock, its output handler's time for
the step), moved to `Usage.start`'s clock."""

VLLM_MARKS = (*ENGINE_MARKS, RECEIVED)
"""The marks read from vLLM's stats: a line has them only where vLLM timed the request."""


usage_scope: contextvars.ContextVar[Usage | None] = contextvars.ContextVar(
    "access_log_usage", default=None
)


def record_usage(prompt_tokens: int, completion_tokens: int) -> None:
    """Note the current request's token counts for its access-log line (no-op outside one)."""
    usage = usage_scope.get()
    if usage is not None:
        usage.prompt_tokens = prompt_tokens
        usage.completion_tokens = completion_tokens


def record_mark(name: str) -> None:
    """Note that the current request reached point `name` (one of MARKS) now."""
    usage = usage_scope.get()
    if usage is not None:
        usage.mark(name)


def record_engine_marks(stats: object) -> None:
    """Note when the engine core queued, first scheduled and first sampled the current
    request and when this process's engine client took in that token, from `stats`
    (vLLM's `RequestStateStats`, a `RequestOutput`'s `metrics`; the timestamps it has not
    set yet are 0 and skipped). On Linux `time.perf_counter` and the engine core's
    `time.monotonic` read the same clock (CLOCK_MONOTONIC), so the marks are times since
    the request reached the app like the others. No-op outside a request."""
    usage = usage_scope.get()
    if usage is None or stats is None:
        return
    for name, attr in ENGINE_MARKS.items():
        at = getattr(stats, attr, None)
        if isinstance(at, float) and at > 0 and name not in usage.marks:
            usage.marks[name] = (at - usage.start) * 1000
    arrival = getattr(stats, "arrival_time", None)
    latency = getattr(stats, "first_token_latency", None)
    if (
        RECEIVED not in usage.marks
        and isinstance(arrival, float)
        and isinstance(latency, float)
        and latency > 0
    ):
        wall_to_ours = time.perf_counter() - time.time()
        usage.marks[RECEIVED] = (arrival + latency + wall_to_ours - usage.start) * 1000


def record_error(code: str) -> None:
    """Note that the current request sent an error with this code (no-op outside one)."""
    usage = usage_scope.get()
    if usage is not None:
        usage.error_code = code


def log_access(
    request_id: str, method: str, path: str, status: int, latency: float, usage: Usage
) -> None:
    """The access-log line of one finished (or failed) request."""
    route = path[:256]
    fields = {
        "request_id": request_id,
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
    for name in MARKS:
        at = usage.marks.get(name)
        fields[f"{name}_ms"] = None if at is None else round(at, 3)
        if at is not None:
            tokens += f" {name}={at:.1f}ms"
    logger.info("%s %s %d %.3fs%s", method, route, status, latency, tokens, extra=fields)
