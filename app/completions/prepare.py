"""From a validated `/v1/completions` request to a CompletionJob.

The normalizations that apply to raw prompts are the chat path's: the model name
resolves through the registry, invisible characters are stripped from prompt text, and
sampling values the request leaves out come from the settings, then the model's
`generation_config.json` (as `vllm serve` does; Qwen3's chat-mode recommendations are
for chats, not raw text).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.access_log import record_mark
from app.chat.normalize import Defaults, clean_text
from app.chat.sampling import OPTIONAL_SAMPLING, new_sampling_params, token_bias
from app.encode import TurnTally, encode
from app.engine import Tokenizer, vocab_size
from app.errors import GatewayError
from app.greedy_n import copies
from app.schemas.chat import continuous_usage, include_usage
from app.schemas.completions import CompletionRequest
from app.state import Gateway
from app.structured import Constraint, requested_constraint

logger = logging.getLogger(__name__)

# generation_config.json keys `vllm serve` takes as defaults
MODEL_DEFAULT_KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")


@dataclass(frozen=True)
class PromptInput:
    text: str  # what `echo` returns (token prompts are decoded)
    token_ids: list[int]


@dataclass
class CompletionJob:
    request_id: str
    created: int
    model: str
    prompts: list[PromptInput]
    params: Any  # vllm.SamplingParams
    n: int = 1
    copies: int = 1  # choices per engine sequence (n > 1 with greedy sampling: app.greedy_n)
    echo: bool = False
    echo_only: bool = False  # echo with max_tokens 0: the prompt (and its logprobs) only
    logprobs: int | None = None
    include_usage: bool = False
    continuous_usage: bool = False  # usage in every chunk (vLLM's continuous_usage_stats)
    active: dict[str, Callable[[], object]] | None = None  # in-flight registry (for drain)
    arrival_time: float | None = None  # time.time() when the request arrived (vLLM's timings)
    constraint_param: str | None = None  # the field the output constraint came from
    # each prompt's prefix-cache hits (vLLM's count), set at the prompt's first output
    cached_tokens: dict[int, int] = field(default_factory=dict)


def new_completion_id(request_id: str | None = None) -> str:
    """`cmpl-<id>`: the client's X-Request-Id (made unique) or a fresh one."""
    if request_id:
        return f"cmpl-{request_id}-{uuid.uuid4().hex[:8]}"
    return f"cmpl-{uuid.uuid4().hex}"


def sampling_defaults(request: CompletionRequest, defaults: Defaults) -> dict[str, Any]:
    """Values for the sampling fields the request left out: settings, then the model's."""
    out: dict[str, Any] = {}
    for key in MODEL_DEFAULT_KEYS:
        if getattr(request, key) is not None:
            continue
        value = defaults.sampling.get(key, defaults.generation_config.get(key))
        if value is not None:
            out[key] = int(value) if key == "top_k" else value
    return out


def validate(request: CompletionRequest) -> None:
    """400s for what the gateway does not do."""
    if request.suffix:
        raise GatewayError(
            "suffix is not supported: the served model has no fill-in-the-middle mode. "
            "Send the text before the gap as the prompt.",
            param="suffix",
            code="unsupported_parameter",
        )
    if request.best_of is not None and request.best_of != request.n:
        raise GatewayError(
            "best_of is not supported; use n for several completions.",
            param="best_of",
            code="unsupported_parameter",
        )
    if request.max_tokens == 0 and not request.echo:
        raise GatewayError("max_tokens may be 0 only with echo.", param="max_tokens")
    if isinstance(request.prompt, list) and not request.prompt:
        raise GatewayError("prompt must not be empty.", param="prompt")


async def prompt_inputs(
    request: CompletionRequest, tokenizer: Tokenizer, tally: TurnTally | None = None
) -> tuple[list[PromptInput], bool]:
    """Each prompt's text and token ids; True when invisible characters were stripped
    (`tally`: see `app.encode`)."""
    raw = request.prompt
    items: list[str | list[int]]
    if isinstance(raw, str):
        items = [raw]
    elif raw and all(isinstance(x, int) for x in raw):
        items = [[int(x) for x in raw]]  # type: ignore[arg-type]
    else:
        items = list(raw)  # type: ignore[arg-type]
    vocab = vocab_size(tokenizer)
    out: list[PromptInput] = []
    stripped = False
    for i, item in enumerate(items):
        where = "prompt" if len(items) == 1 else f"prompt[{i}]"
        if isinstance(item, str):
            text, changed = clean_text(item, where)
            stripped = stripped or changed
            ids = await encode(
                tokenizer, text, add_special_tokens=request.add_special_tokens, tally=tally
            )
        else:
            ids = list(item)
            bad = [t for t in ids if vocab is not None and t >= vocab]
            if bad:
                raise GatewayError(
                    f"{where} holds token id {bad[0]}, outside the vocabulary (size {vocab}).",
                    param="prompt",
                )
            text = tokenizer.decode(ids)
        if not ids:
            raise GatewayError(f"{where} is empty.", param="prompt")
        out.append(PromptInput(text, ids))
    return out, stripped


def check_length(prompts: list[PromptInput], max_tokens: int, max_model_len: int) -> None:
    longest = max(len(p.token_ids) for p in prompts)
    if longest + max_tokens > max_model_len:
        raise GatewayError(
            f"This model's maximum context length is {max_model_len} tokens. However, you "
            f"requested {longest + max_tokens} tokens ({longest} in the prompt, {max_tokens} "
            "in the completion). Please reduce the length of the prompt or completion.",
            param="max_tokens",
            code="context_length_exceeded",
        )


def build_params(
    request: CompletionRequest,
    max_tokens: int,
    defaults: dict[str, Any],
    echo_only: bool,
    vocab: int | None = None,
    constraint: Constraint | None = None,
) -> Any:
    from vllm.sampling_params import RequestOutputKind

    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    kwargs: dict[str, Any] = {
        "n": request.n,
        "max_tokens": 1 if echo_only else max_tokens,
        "min_tokens": min(request.min_tokens, max_tokens),
        "stop": stop,
        "seed": request.seed,
        "logprobs": request.logprobs,
        "ignore_eos": request.ignore_eos,
        "skip_special_tokens": request.skip_special_tokens,
        "include_stop_str_in_output": request.include_stop_str_in_output,
        "output_kind": RequestOutputKind.DELTA if request.stream else RequestOutputKind.FINAL_ONLY,
    }
    if request.echo and request.logprobs is not None:
        kwargs["prompt_logprobs"] = request.logprobs
    bias = token_bias(request.logit_bias, vocab)
    if bias:
        kwargs["logit_bias"] = bias
    for name in OPTIONAL_SAMPLING:
        value = getattr(request, name, None)
        if value is None:
            value = defaults.get(name)
        if value is not None:
            kwargs[name] = value
    return new_sampling_params(kwargs, constraint)


async def prepare_completion(
    gateway: Gateway, body: CompletionRequest, request_id: str
) -> CompletionJob:
    arrival = time.time()
    served = gateway.served_model(body.model)
    validate(body)
    engine = gateway.engine
    prompts, stripped = await prompt_inputs(
        body, engine.tokenizer, gateway.metrics.count_turn_tokens
    )
    defaults = sampling_defaults(body, gateway.defaults)
    for kind, fired in (("invisible_chars", stripped), ("sampling_defaults", bool(defaults))):
        if fired:
            gateway.metrics.normalizations.labels(kind).inc()
    max_tokens = 16 if body.max_tokens is None else body.max_tokens
    echo_only = body.echo and max_tokens == 0
    check_length(prompts, max(max_tokens, 1), engine.info.max_model_len)
    constraint = requested_constraint(body)
    params = build_params(
        body, max_tokens, defaults, echo_only, vocab_size(engine.tokenizer), constraint
    )
    record_mark("prompt")
    return CompletionJob(
        request_id=request_id,
        created=int(time.time()),
        model=body.model or served.name,
        prompts=prompts,
        params=params,
        n=body.n,
        copies=copies(body.n, params),
        echo=body.echo,
        echo_only=echo_only,
        logprobs=body.logprobs,
        include_usage=include_usage(body.stream_options),
        continuous_usage=continuous_usage(body.stream_options),
        active=gateway.lifecycle.active,
        arrival_time=arrival,
        constraint_param=constraint.param if constraint is not None else None,
    )
