"""`n > 1` with greedy sampling: one engine sequence answered as n identical choices.

vLLM refuses it ("n must be 1 when using greedy sampling"); OpenAI accepts
`temperature: 0, n: 3` and returns three choices. Greedy decoding picks the same token
every step, so the n sequences would be identical: the engine runs one (n=1) and each of
its outputs is copied to choice indexes 0..n-1. Every choice streams its own chunks and
counts its own tokens, so usage reports n x the completion tokens, as OpenAI bills n
choices (the prompt counts once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

GREEDY_BELOW = 1e-5  # vLLM's _SAMPLING_EPS: a temperature under it is greedy


def one_greedy_sequence(kwargs: dict[str, Any]) -> None:
    """SamplingParams kwargs: n=1 where sampling is greedy (the copies come later)."""
    temperature = kwargs.get("temperature")
    if temperature is not None and float(temperature) < GREEDY_BELOW:
        kwargs["n"] = 1


def copies(requested_n: int, params: Any) -> int:
    """How many choices each engine sequence answers: n when it runs greedily as one."""
    engine_n = getattr(params, "n", requested_n) or 1
    return requested_n // engine_n if engine_n < requested_n else 1


def fan_out(outputs: Sequence[Any], count: int) -> Sequence[Any]:
    """Each of one sequence's outputs (vLLM CompletionOutputs) as choices 0..count-1."""
    if count == 1:
        return outputs
    return [dataclasses.replace(out, index=i) for out in outputs for i in range(count)]
