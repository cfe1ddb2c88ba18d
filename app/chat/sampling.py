"""Turn a (normalized) chat request into vLLM SamplingParams."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest

if TYPE_CHECKING:
    from vllm import SamplingParams


def completion_budget(request: ChatCompletionRequest, prompt_len: int, max_model_len: int) -> int:
    """Tokens the model may generate; 400 `context_length_exceeded` when it can't fit."""
    limit = request.token_limit()
    room = max_model_len - prompt_len
    if limit is None:
        if room <= 0:
            raise GatewayError(
                f"This model's maximum context length is {max_model_len} tokens, but the "
                f"messages use {prompt_len} tokens, leaving no room for a completion.",
                param="messages",
                code="context_length_exceeded",
            )
        return room
    if prompt_len + limit > max_model_len:
        raise GatewayError(
            f"This model's maximum context length is {max_model_len} tokens. However, you "
            f"requested {prompt_len + limit} tokens ({prompt_len} in the messages, {limit} in "
            f"the completion). Please reduce the length of the messages or completion.",
            param="max_tokens"
            if request.max_completion_tokens is None
            else "max_completion_tokens",
            code="context_length_exceeded",
        )
    return limit


def build_sampling_params(
    request: ChatCompletionRequest, max_tokens: int, *, stream: bool
) -> SamplingParams:
    """SamplingParams for the request; streaming asks the engine for deltas only."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    logprobs: int | None = None
    if request.logprobs:
        logprobs = request.top_logprobs or 0
    elif request.top_logprobs:
        raise GatewayError("top_logprobs requires logprobs to be true.", param="top_logprobs")
    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    kwargs: dict[str, object] = {
        "n": request.n,
        "max_tokens": max_tokens,
        "min_tokens": min(request.min_tokens, max_tokens),
        "stop": stop,
        "seed": request.seed,
        "logprobs": logprobs,
        "ignore_eos": request.ignore_eos,
        "skip_special_tokens": request.skip_special_tokens,
        "output_kind": RequestOutputKind.DELTA if stream else RequestOutputKind.FINAL_ONLY,
    }
    for name in (
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
    ):
        value = getattr(request, name)
        if value is not None:
            kwargs[name] = value
    try:
        return SamplingParams(**kwargs)
    except ValueError as exc:
        raise GatewayError(f"Invalid sampling parameters: {exc}") from exc
