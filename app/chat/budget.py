"""The thinking budget: cap `<think>` at N tokens, close it, let the model answer.

Phase 1 generates at most N reasoning tokens. If the model is still thinking then,
the gateway appends `\n</think>\n\n` and phase 2 continues from the prompt plus
everything generated, within the client's token limit. Usage counts every token the
answer holds (the inserted ones too), so it still adds up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine import Engine
from app.reasoning import THINK_CLOSE, THINK_OPEN

CLOSE_TEXT = "\n" + THINK_CLOSE + "\n\n"
OPEN_SLACK = 2  # tokens for `<think>\n` before the reasoning itself


@dataclass
class Step:
    """One choice's new output, shaped like vLLM's CompletionOutput (delta mode)."""

    index: int
    text: str
    token_ids: Sequence[int]
    logprobs: Any
    finish_reason: str | None


def still_thinking(text: str, in_reasoning: bool) -> bool:
    """True when the text opened a think block (or started inside one) and didn't close it."""
    stripped = text.lstrip()
    opened = in_reasoning or stripped.startswith(THINK_OPEN)
    return opened and THINK_CLOSE not in text


async def budgeted(
    engine: Engine,
    prompt_ids: list[int],
    params: Any,
    request_id: str,
    budget: int,
    in_reasoning: bool,
) -> AsyncIterator[list[Step]]:
    """Delta steps for one choice (n=1) with the reasoning capped at `budget` tokens."""
    from vllm.sampling_params import RequestOutputKind

    limit = int(params.max_tokens)
    first = params.clone()
    first.output_kind = RequestOutputKind.DELTA
    first.max_tokens = max(1, min(limit, budget + (0 if in_reasoning else OPEN_SLACK)))
    first.min_tokens = min(first.min_tokens, first.max_tokens)
    text = ""
    ids: list[int] = []
    finish: str | None = None
    async for output in engine.generate(prompt_ids, first, request_id):
        out = output.outputs[0]
        text += out.text
        ids.extend(out.token_ids)
        finish = out.finish_reason
        hit_cap = finish == "length" and len(ids) < limit
        yield [Step(0, out.text, out.token_ids, out.logprobs, None if hit_cap else finish)]
    if finish != "length" or len(ids) >= limit:
        return
    inserted: list[int] = []
    if still_thinking(text, in_reasoning):
        inserted = engine.tokenizer.encode(CLOSE_TEXT, add_special_tokens=False)
        yield [Step(0, CLOSE_TEXT, inserted, None, None)]
    remaining = limit - len(ids) - len(inserted)
    if remaining <= 0:
        yield [Step(0, "", [], None, "length")]
        return
    second = first.clone()
    second.max_tokens = remaining
    async for output in engine.generate(
        prompt_ids + ids + inserted, second, request_id + "-answer"
    ):
        out = output.outputs[0]
        yield [Step(0, out.text, out.token_ids, out.logprobs, out.finish_reason)]
