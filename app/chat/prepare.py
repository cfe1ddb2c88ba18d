"""From a validated request to a ChatJob: resolve the model, normalize, render, budget."""

from __future__ import annotations

import logging
import time
import uuid

from app.chat.normalize import Defaults, normalize
from app.chat.prompt import render_prompt
from app.chat.sampling import build_sampling_params, completion_budget
from app.chat.service import ChatJob, ReasoningMode
from app.errors import GatewayError
from app.reasoning import THINK_OPEN
from app.schemas.chat import ChatCompletionRequest
from app.state import Gateway

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
        enable_thinking=settings.default_enable_thinking,
        sampling=sampling,
        generation_config=gateway.engine.info.generation_config,
    )


def prepare_chat(gateway: Gateway, body: ChatCompletionRequest, request_id: str) -> ChatJob:
    served = gateway.registry.resolve(body.model)
    if served is None:
        names = ", ".join(gateway.registry.valid_names())
        raise GatewayError(
            f"The model `{body.model}` does not exist. Valid names: {names}.",
            status=404,
            param="model",
            code="model_not_found",
        )
    normalized = normalize(body, gateway.defaults)
    for kind in normalized.fired:
        gateway.metrics.normalizations.labels(kind).inc()
    if normalized.fired:
        logger.debug("request %s normalized: %s", request_id, ", ".join(normalized.fired))
    request = normalized.request
    engine = gateway.engine
    prompt = render_prompt(engine.tokenizer, request, normalized.template_kwargs)
    max_tokens = completion_budget(request, len(prompt.token_ids), engine.info.max_model_len)
    params = build_sampling_params(request, max_tokens, stream=request.stream)
    keep = request.return_reasoning is not False
    inline = request.reasoning_in_content
    if inline is None:
        inline = gateway.settings.reasoning_in_content
    budget = request.max_reasoning_tokens
    if budget is not None and request.n > 1:
        raise GatewayError(
            "max_reasoning_tokens works with n=1; send one request per choice.",
            param="max_reasoning_tokens",
        )
    mode = ReasoningMode(
        parse=not inline,
        keep=keep,
        in_reasoning=prompt.text.rstrip().endswith(THINK_OPEN),
    )
    return ChatJob(
        request_id=request_id,
        created=int(time.time()),
        model=body.model or served.name,
        prompt=prompt,
        params=params,
        top_logprobs=(request.top_logprobs or 0) if request.logprobs else None,
        include_usage=bool(request.stream_options and request.stream_options.include_usage),
        reasoning=mode,
        reasoning_budget=budget if normalized.thinking else None,
        active=gateway.lifecycle.active,
    )
