"""From a validated request to a ChatJob: resolve the model, normalize, render, budget.

Tools and constraints: `plan_tools` decides what the template offers and whether the
answer is a forced tool call; otherwise `response_format` and vLLM's extras may
constrain it. A constrained answer runs without thinking unless the request asks for
it (see `app.chat.normalize`); when it does, the model thinks first, unconstrained, and
the constraint applies after `</think>` (see `app.chat.budget`).
"""

from __future__ import annotations

import logging
import time
import uuid

from app.access_log import record_mark
from app.chat.normalize import Defaults, normalize
from app.chat.prompt import continues_final_message, open_think_block, render_prompt
from app.chat.sampling import build_sampling_params, completion_budget
from app.chat.service import ChatJob, ReasoningMode
from app.chat.tools import plan_tools
from app.chat.unsupported import refuse_unsupported
from app.engine import vocab_size
from app.errors import GatewayError
from app.greedy_n import copies
from app.reasoning import THINK_CLOSE, THINK_OPEN
from app.schemas.chat import ChatCompletionRequest, continuous_usage, include_usage
from app.state import Gateway
from app.structured import requested_constraint
from app.text_stream import MIN_PROMPT_TOKENS

logger = logging.getLogger(__name__)


def new_completion_id(request_id: str | None = None) -> str:
    """`chatcmpl-<id>`: the client's X-Request-Id (made unique) or a fresh one.

    The same id is the response `id` and the engine's request id, so logs line up.
    """
    if request_id:
        return f"chatcmpl-{request_id}-{uuid.uuid4().hex[:8]}"
    return f"chatcmpl-{uuid.uuid4().hex}"


def server_defaults(gateway: Gateway) -> Defaults:
    settings = gateway.settings
    sampling = {
        key: value
        for key, value in (
            ("temperature", settings.default_temperature),
            ("top_p", settings.default_top_p),
            ("top_k", settings.default_top_k),
        )
        if value is not None
    }
    return Defaults(
        system_prompt=settings.default_system_prompt,
        fill_system=settings.fill_system_message,
        enable_thinking=settings.default_enable_thinking,
        sampling=sampling,
        generation_config=gateway.engine.info.generation_config,
    )


async def prepare_chat(gateway: Gateway, body: ChatCompletionRequest, request_id: str) -> ChatJob:
    arrival = time.time()
    served = gateway.served_model(body.model)
    normalized = normalize(body, gateway.defaults)
    refuse_unsupported(normalized.request)  # after extra_body's fields are lifted
    for kind in normalized.fired:
        gateway.metrics.normalizations.labels(kind).inc()
    if normalized.fired:
        logger.debug("request %s normalized: %s", request_id, ", ".join(normalized.fired))
    request = normalized.request
    engine = gateway.engine
    tools = plan_tools(request)
    constraint = tools.constraint or requested_constraint(request)
    prompt = await render_prompt(
        engine.tokenizer,
        request,
        normalized.template_kwargs,
        tools.template_tools,
        gateway.metrics.count_turn_tokens,
    )
    # Constrained output with thinking asked for: think first, then the constrained answer
    # (not inside a continued message: the template has closed its think block).
    think_first = (
        constraint is not None and normalized.thinking and not continues_final_message(request)
    )
    if think_first:
        if request.n > 1:
            raise GatewayError(
                "Thinking before a constrained answer works with n=1; send one request per "
                "choice, or turn thinking off.",
                param="n",
            )
        prompt = open_think_block(engine.tokenizer, prompt)
    max_tokens = completion_budget(request, len(prompt.token_ids), engine.info.max_model_len)
    vocab = vocab_size(engine.tokenizer)
    budget = request.max_reasoning_tokens
    reasoning_budget = budget if normalized.thinking else None
    # the gateway decodes a plain request's tokens (app.text_stream) when its prompt is long;
    # a budgeted or two-phase one keeps vLLM's text, which app.chat.budget reads as it comes
    own_text = (
        not think_first
        and reasoning_budget is None
        and engine.detokenizer is not None
        and len(prompt.token_ids) >= MIN_PROMPT_TOKENS
    )
    params = build_sampling_params(
        request,
        max_tokens,
        stream=request.stream,
        constraint=None if think_first else constraint,
        stop_at=THINK_CLOSE if think_first else None,
        vocab=vocab,
        detokenize=not own_text,
    )
    answer_params = None
    if think_first:
        answer_params = build_sampling_params(
            request,
            max_tokens,
            stream=request.stream,
            constraint=constraint,
            vocab=vocab,
        )
    keep = request.return_reasoning is not False
    inline = request.reasoning_in_content
    if inline is None:
        inline = gateway.settings.reasoning_in_content
    if budget is not None and request.n > 1:
        raise GatewayError(
            "max_reasoning_tokens works with n=1; send one request per choice.",
            param="max_reasoning_tokens",
        )
    mode = ReasoningMode(
        # A grammar from the first token writes no think block: a `</think>` in the
        # answer (inside a JSON string, say) is content.
        parse=not inline and (constraint is None or think_first),
        keep=keep,
        in_reasoning=prompt.text.rstrip().endswith(THINK_OPEN),
    )
    record_mark("prompt")
    return ChatJob(
        request_id=request_id,
        created=int(time.time()),
        model=body.model or served.name,
        prompt=prompt,
        params=params,
        top_logprobs=(request.top_logprobs or 0) if request.logprobs else None,
        include_usage=include_usage(request.stream_options),
        continuous_usage=continuous_usage(request.stream_options),
        reasoning=mode,
        reasoning_budget=reasoning_budget,
        tool_calls=tools.parse,
        answer_params=answer_params,
        active=gateway.lifecycle.active,
        arrival_time=arrival,
        copies=copies(request.n, params),
        constraint_param=constraint.param if constraint is not None else None,
    )
