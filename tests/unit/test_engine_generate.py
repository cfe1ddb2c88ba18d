"""`Engine.generate`: the engine input it hands to vLLM's AsyncLLM."""

from __future__ import annotations

from typing import Any

import vllm

from app.engine import Engine, EngineInfo


class RecordingLLM:
    """Stands in for AsyncLLM: records what `generate` was given."""

    def __init__(self) -> None:
        self.prompts: list[Any] = []

    def generate(self, prompt: Any, params: Any, request_id: str) -> Any:
        self.prompts.append(prompt)
        return iter(())


def _engine() -> tuple[Engine, RecordingLLM]:
    llm = RecordingLLM()
    info = EngineInfo("/m", ("m",), 2048, 8, 2048, {})
    return Engine(llm, tokenizer=None, info=info), llm  # type: ignore[arg-type]


def test_the_arrival_time_travels_with_the_prompt() -> None:
    engine, llm = _engine()
    engine.generate([1, 2, 3], vllm.SamplingParams(max_tokens=4), "r1", arrival_time=100.25)
    engine.generate([4], vllm.SamplingParams(max_tokens=4), "r2")
    first, second = llm.prompts
    assert first["prompt_token_ids"] == [1, 2, 3] and first["arrival_time"] == 100.25
    # without one, vLLM stamps its own arrival (time.time() in its input processor)
    assert second["prompt_token_ids"] == [4] and "arrival_time" not in second
