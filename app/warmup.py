"""Start-up warm-up: the first client request should not pay for what is built on first use.

On a fresh process the first chat request costs several times a later one: the chat
template is compiled, the tokenizer, the engine client and the detokenizer take their
first-call paths, anyio loads its asyncio backend for the first streamed response, and
on a GPU vLLM 0.26 JIT-compiles its Triton top-k/top-p sampling kernel in the engine core
the first time a batch of each alignment class (1, a multiple of 16, any other size)
samples with top_k/top_p, which the gateway's Qwen3 defaults always set. (Later vLLM
releases warm those kernels themselves.) So before the gateway serves, it runs a few
short generations through the same render, tokenize and sampling steps a request takes,
with the server's default sampling: one alone, then batches of 16 and 17 at once.

The warm-up requests go to the engine directly, not through HTTP: the gateway's own
request metrics do not count them; vLLM's engine counters (`vllm:request_success_total`,
token totals) do, as they count every request the engine serves.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING, Final

import anyio

from app.chat.normalize import normalize
from app.chat.prompt import render_prompt
from app.chat.sampling import build_sampling_params
from app.schemas.chat import ChatCompletionRequest
from app.state import Gateway

if TYPE_CHECKING:
    from vllm import SamplingParams

logger = logging.getLogger(__name__)

BATCHES: Final = (1, 16, 17)
"""Requests sent at once, round by round: a batch of one, a multiple of 16, another size."""

MAX_TOKENS: Final = 4
"""Tokens each warm-up request generates (the later ones decode as one batch)."""


def warmup_request() -> ChatCompletionRequest:
    """A chat request as a client without any options would send it."""
    return ChatCompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": MAX_TOKENS}
    )


async def warm_up(gateway: Gateway, batches: tuple[int, ...] = BATCHES) -> float | None:
    """Run the warm-up rounds; the seconds they took, or None when one failed (logged: a
    failed warm-up costs the first client the wait it was to spare, nothing more)."""
    try:
        return await _warm_up(gateway, batches)
    except Exception as exc:
        logger.warning("warm-up failed, serving without it: %s", exc)
        return None


async def _warm_up(gateway: Gateway, batches: tuple[int, ...]) -> float:
    started = time.perf_counter()
    # Starlette's StreamingResponse opens an anyio task group per stream, and anyio imports
    # its asyncio backend on the first one: 12 ms on the CI box, paid by the first stream.
    async with anyio.create_task_group():
        pass
    normalized = normalize(warmup_request(), gateway.defaults)
    prompt = await render_prompt(
        gateway.engine.tokenizer, normalized.request, normalized.template_kwargs
    )
    # the gateway's own detokenizer is checked against the tokenizer's once (~6 ms)
    decoder = "vLLM" if gateway.engine.detokenizer is None else "the gateway (long prompts)"
    logger.info("generated tokens decoded by %s", decoder)
    params = build_sampling_params(normalized.request, MAX_TOKENS, stream=True)
    for size in batches:
        await asyncio.gather(*(_generate(gateway, prompt.token_ids, params) for _ in range(size)))
    elapsed = time.perf_counter() - started
    logger.info(
        "warm-up: %d requests in batches of %s, %.0f ms",
        sum(batches),
        "/".join(map(str, batches)),
        elapsed * 1000,
    )
    return elapsed


async def _generate(gateway: Gateway, token_ids: list[int], params: SamplingParams) -> None:
    request_id = f"warmup-{uuid.uuid4().hex}"
    async for _ in gateway.engine.generate(token_ids, params, request_id):
        pass
