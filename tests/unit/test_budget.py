"""app.chat.budget: think first, then answer under the answer's own params (fake engine)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.chat.budget import budgeted

vllm = pytest.importorskip("vllm")


@dataclass
class Out:
    index: int
    text: str
    token_ids: list[int]
    logprobs: Any = None
    finish_reason: str | None = None
    stop_reason: Any = None


@dataclass
class Result:
    outputs: list[Out]


class Tok:
    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


@dataclass
class FakeEngine:
    """Plays one scripted list of outputs per generate() call; records the calls."""

    scripts: list[list[Out]]
    tokenizer: Tok = field(default_factory=Tok)
    calls: list[tuple[list[int], Any, str]] = field(default_factory=list)
    arrivals: list[float | None] = field(default_factory=list)

    async def generate(
        self, prompt: list[int], params: Any, request_id: str, arrival_time: float | None = None
    ) -> AsyncIterator[Any]:
        self.calls.append((prompt, params, request_id))
        self.arrivals.append(arrival_time)
        for out in self.scripts[len(self.calls) - 1]:
            yield Result([out])


def params(**kwargs: Any) -> Any:
    return vllm.SamplingParams(max_tokens=100, **kwargs)


async def run(engine: FakeEngine, *args: Any) -> list[tuple[str, str | None]]:
    steps = []
    async for batch in budgeted(engine, [1, 2], *args):  # type: ignore[arg-type]
        steps += [(s.text, s.finish_reason) for s in batch]
    return steps


async def test_constrained_answer_after_think_close() -> None:
    engine = FakeEngine(
        [
            [Out(0, "hmm", [7, 8]), Out(0, "", [9], finish_reason="stop", stop_reason="</think>")],
            [Out(0, '{"a": 1}', [5, 6], finish_reason="stop")],
        ]
    )
    first = params(stop=["</think>"])
    answer = params(stop=None)
    steps = await run(engine, first, "req", None, True, answer, 1234.5)
    assert steps == [("hmm", None), ("", None), ("</think>\n\n", None), ('{"a": 1}', "stop")]
    # vLLM times the request from its arrival; the answer phase is a new engine request
    assert engine.arrivals == [1234.5, None]
    prompt, used, request_id = engine.calls[1]
    assert prompt == [1, 2, 7, 8, 9, 10, 10]  # prompt + reasoning + "\n\n"
    assert request_id == "req-answer"
    assert used.max_tokens == 100 - 3 - 2 and used.stop == []


async def test_model_that_ends_while_thinking_gets_no_answer_phase() -> None:
    engine = FakeEngine([[Out(0, "hmm", [7], finish_reason="stop", stop_reason=None)]])
    steps = await run(engine, params(stop=["</think>"]), "req", None, True, params())
    assert steps == [("hmm", "stop")]
    assert len(engine.calls) == 1


async def test_budget_closes_the_block_then_answers_constrained() -> None:
    engine = FakeEngine(
        [
            [Out(0, "long", [7, 7, 7, 7], finish_reason="length")],
            [Out(0, "ok", [5], finish_reason="stop")],
        ]
    )
    steps = await run(engine, params(stop=["</think>"]), "req", 4, True, params())
    assert steps == [("long", None), ("\n</think>\n\n", None), ("ok", "stop")]
    assert engine.calls[0][1].max_tokens == 4


async def test_plain_budget_is_unchanged() -> None:
    engine = FakeEngine(
        [
            [Out(0, "<think>\nab", [1, 2, 3], finish_reason="length")],
            [Out(0, "x", [4], finish_reason="stop")],
        ]
    )
    steps = await run(engine, params(), "req", 1, False)
    assert steps[1] == ("\n</think>\n\n", None)
    assert engine.calls[1][1].stop == []
