"""What the engine's failures become: the OpenAI-style error a request gets, whole or as
the last SSE frame of a cut stream."""

from __future__ import annotations

import logging

from app.errors import GatewayError

logger = logging.getLogger(__name__)


def engine_failure(exc: BaseException) -> GatewayError:
    name = type(exc).__name__
    if name == "EngineDeadError":
        return GatewayError(
            "The inference engine has stopped; retry later.",
            status=503,
            code="engine_dead",
            headers={"Retry-After": "5"},
        )
    if name in ("VLLMValidationError", "ValueError"):
        param = getattr(exc, "parameter", None)  # VLLMValidationError names the field
        if isinstance(param, str) and exc.args:
            return GatewayError(f"The engine rejected the request: {exc.args[0]}", param=param)
        return GatewayError(f"The engine rejected the request: {exc}")
    cause = exc.__cause__
    if isinstance(cause, (ValueError, TypeError, OverflowError)):
        # vLLM wraps input it could not take (EngineGenerateError from a bad value).
        logger.warning("engine rejected a request: %r", cause)
        return GatewayError(f"The engine could not take this request: {cause}")
    logger.exception("engine error", exc_info=exc)
    return GatewayError(
        "The inference engine failed on this request.", status=500, code="engine_error"
    )


def error_frame(exc: Exception) -> bytes:
    """The SSE frame ending a stream that `exc` cut (ours as it is, others as mapped)."""
    error = exc if isinstance(exc, GatewayError) else engine_failure(exc)
    return b"data: " + error.to_bytes() + b"\n\n"


ABORTED = GatewayError(
    "The request was stopped because the server is shutting down; retry it.",
    status=503,
    code="server_shutting_down",
    headers={"Retry-After": "5"},
)
