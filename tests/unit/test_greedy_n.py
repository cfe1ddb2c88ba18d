"""app.greedy_n: `n > 1` with greedy sampling runs one engine sequence, answered as n
identical choices (vLLM itself refuses it: "n must be 1 when using greedy sampling")."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.sampling import build_sampling_params
from app.greedy_n import copies, fan_out, one_greedy_sequence
from app.schemas.chat import ChatCompletionRequest


def req(**fields: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "hi"}]} | fields
    )


@pytest.mark.parametrize(
    ("temperature", "n", "engine_n"),
    [(0, 3, 1), (0.0, 1, 1), (1e-6, 2, 1), (0.7, 3, 3), (None, 3, 3)],
)
def test_only_greedy_sampling_runs_one_sequence(
    temperature: float | None, n: int, engine_n: int
) -> None:
    kwargs: dict[str, Any] = {"n": n, "temperature": temperature}
    if temperature is None:
        del kwargs["temperature"]
    one_greedy_sequence(kwargs)
    assert kwargs["n"] == engine_n


def test_greedy_n_builds_params_vllm_takes() -> None:
    """Was GatewayError "Invalid sampling parameters: n must be 1 when using greedy
    sampling, got 3." (vLLM's check)."""
    params = build_sampling_params(req(temperature=0, n=3), 16, stream=False)
    assert params.n == 1 and params.temperature == 0
    assert copies(3, params) == 3
    sampled = build_sampling_params(req(temperature=0.8, n=3), 16, stream=False)
    assert sampled.n == 3 and copies(3, sampled) == 1


def test_fan_out_copies_each_output_to_every_choice_index() -> None:
    from vllm.outputs import CompletionOutput

    out = CompletionOutput(
        index=0, text="ab", token_ids=[1, 2], cumulative_logprob=None, logprobs=None
    )
    assert fan_out([out], 1) == [out]
    fanned = fan_out([out], 3)
    assert [o.index for o in fanned] == [0, 1, 2]
    assert all(o.text == "ab" and list(o.token_ids) == [1, 2] for o in fanned)
    assert out.index == 0  # the engine's own object is left as it was
