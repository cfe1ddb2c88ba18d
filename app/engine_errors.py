"""What the engine's failures become: the OpenAI-style error a request gets, whole or as
the last SSE frame of a cut stream."""

from __future__ import annotations

import logging

from app.errors import GatewayError

logger = logging.getLogger(__name__)


STRUCTURED_OUTPUT_MODULES = "vllm.v1.structured_output"
STRUCTURED_OUTPUT_CHECK = "_validate_structured_outputs"
"""Where vLLM checks a request's output constraint (`SamplingParams`' check, and each
grammar backend's `validate_*` in those modules; vLLM 0.26 and later): what they raise
names no parameter, but it is the constraint they refused."""


def _raised_checking_a_grammar(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        module = frame.f_globals.get("__name__", "")
        if frame.f_code.co_name == STRUCTURED_OUTPUT_CHECK or (
            isinstance(module, str) and module.startswith(STRUCTURED_OUTPUT_MODULES)
        ):
            return True
        tb = tb.tb_next
    return False


def engine_failure(exc: BaseException, constraint_param: str | None = None) -> GatewayError:
    """The error for `exc`; `constraint_param` is the request field its output constraint
    came from (`app.structured.Constraint.param`), named when vLLM refused the grammar."""
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
        grammar = constraint_param is not None and _raised_checking_a_grammar(exc)
        return GatewayError(
            f"The engine rejected the request: {exc}", param=constraint_param if grammar else None
        )
    cause = exc.__cause__
    if isinstance(cause, (ValueError, TypeError, OverflowError)):
        # vLLM wraps input it could not take (EngineGenerateError from a bad value).
        logger.warning("engine rejected a request: %r", cause)
        return GatewayError(f"The engine could not take this request: {cause}")
    logger.exception("engine error", exc_info=exc)
    return GatewayError(
        "The inference engine failed on this request.", status=500, code="engine_error"
    )


def as_gateway_error(exc: BaseException, constraint_param: str | None = None) -> GatewayError:
    """Ours as it is, others as `engine_failure` maps them."""
    if isinstance(exc, GatewayError):
        return exc
    return engine_failure(exc, constraint_param)


def error_frame(exc: BaseException, constraint_param: str | None = None) -> bytes:
    """The SSE frame ending a stream that `exc` cut."""
    return b"data: " + as_gateway_error(exc, constraint_param).to_bytes() + b"\n\n"


ABORTED = GatewayError(
    "The request was stopped because the server is shutting down; retry it.",
    status=503,
    code="server_shutting_down",
    headers={"Retry-After": "5"},
)
