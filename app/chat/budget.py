"""Two-phase answers: think first, then answer (under its own sampling parameters).

The thinking budget caps `<think>` at N tokens: phase 1 generates at most N reasoning
tokens; if the model is still thinking then, the gateway appends `\n</think>\n\n` and
phase 2 continues from the prompt plus everything generated, within the client's token
limit.

A constrained answer with thinking on (a tool-call grammar, a JSON schema) works the same
way: phase 1 thinks, unconstrained, and stops at `</think>` (or at the budget); phase 2
runs with the constraint (`answer_params`), so the grammar applies to the answer only.

Usage counts every token the answer holds (the inserted ones too), so it still adds up.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine import Engine, cached_tokens
from app.reasoning import THINK_CLOSE, THINK_OPEN

AFTER_CLOSE = "\n\n"
CLOSE_TEXT = "\n" + THINK_CLOSE + AFTER_CLOSE
OPEN_SLACK = 2  # tokens for `<think>\n` before the reasoning itself


@dataclass
class Step:
    """One choice's new output, shaped like vLLM's CompletionOutput (delta mode)."""

    index: int
    text: str
    token_ids: Sequence[int]
    logprobs: Any
    finish_reason: str | None
    num_cached_tokens: int | None = None  # the prompt's prefix-cache hits, on the first step


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
    budget: int | None,
    in_reasoning: bool,
    answer_params: Any = None,
    arrival_time: float | None = None,
) -> AsyncIterator[list[Step]]:
    """Delta steps for one choice (n=1): reasoning (capped at `budget` tokens), then answer.

    With `answer_params`, `params` must stop at `</think>` (`stop_at` in
    `build_sampling_params`) and the answer is generated under `answer_params`.
    """
    from vllm.sampling_params import RequestOutputKind

    limit = int(params.max_tokens)
    first = params.clone()
    first.output_kind = RequestOutputKind.DELTA
    if budget is not None:
        first.max_tokens = max(1, min(limit, budget + (0 if in_reasoning else OPEN_SLACK)))
    first.min_tokens = min(first.min_tokens, first.max_tokens)
    text = ""
    ids: list[int] = []
    finish: str | None = None
    closed = False
    async for output in engine.generate(prompt_ids, first, request_id, arrival_time):
        out = output.outputs[0]
        text += out.text
        ids.extend(out.token_ids)
        finish = out.finish_reason
        hit_cap = finish == "length" and len(ids) < limit
        closed = answer_params is not None and finish == "stop" and out.stop_reason == THINK_CLOSE
        masked = hit_cap or closed
        cached = cached_tokens(output)
        yield [Step(0, out.text, out.token_ids, out.logprobs, None if masked else finish, cached)]
    inserted: list[int] = []
    if closed:  # the stop string is not in the text: put it back, with the separator
        inserted = engine.tokenizer.encode(AFTER_CLOSE, add_special_tokens=False)
        yield [Step(0, THINK_CLOSE + AFTER_CLOSE, inserted, None, None)]
    elif finish != "length" or len(ids) >= limit:
        return
    elif still_thinking(text, in_reasoning):
        inserted = engine.tokenizer.encode(CLOSE_TEXT, add_special_tokens=False)
        yield [Step(0, CLOSE_TEXT, inserted, None, None)]
    remaining = limit - len(ids) - len(inserted)
    if remaining <= 0:
        yield [Step(0, "", [], None, "length")]
        return
    second = (first if answer_params is None else answer_params).clone()
    second.output_kind = RequestOutputKind.DELTA
    second.max_tokens = remaining
    second.min_tokens = min(second.min_tokens, remaining)
    async for output in engine.generate(
        prompt_ids + ids + inserted, second, request_id + "-answer"
    ):
        out = output.outputs[0]
        yield [Step(0, out.text, out.token_ids, out.logprobs, out.finish_reason)]
