"""app.warmup: the start-up generations (a fake engine here; the live gateway's warm-up on
the real engine is checked in tests/integration/test_warmup.py)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import types
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.chat.normalize import Defaults
from app.text_stream import own_detokenizer
from app.token_bytes import TokenBytes
from app.warmup import BATCHES, MAX_TOKENS, warm_up


@dataclass
class RecordingEngine:
    """Counts the requests in flight at once; each yields one output after a pause."""

    tokenizer: Any
    fail: bool = False
    params: list[Any] = field(default_factory=list)
    prompts: list[list[int]] = field(default_factory=list)
    in_flight: int = 0
    peaks: list[int] = field(default_factory=list)

    checks: int = 0

    @property
    def detokenizer(self) -> Any:
        self.checks += 1
        return own_detokenizer(self.tokenizer, TokenBytes(self.tokenizer))

    async def generate(
        self, prompt: list[int], params: Any, request_id: str, arrival_time: float | None = None
    ) -> AsyncIterator[Any]:
        if self.fail:
            raise RuntimeError("engine said no")
        assert request_id.startswith("warmup-")
        self.params.append(params)
        self.prompts.append(prompt)
        self.in_flight += 1
        self.peaks.append(self.in_flight)
        await asyncio.sleep(0.01)  # all of a batch are in flight before any finishes
        self.in_flight -= 1
        yield object()


def gateway_with(engine: RecordingEngine) -> Any:
    return types.SimpleNamespace(engine=engine, defaults=Defaults())


async def test_warm_up_sends_batches_of_one_sixteen_and_seventeen(tokenizer: Any) -> None:
    engine = RecordingEngine(tokenizer)
    seconds = await warm_up(gateway_with(engine))
    assert seconds is not None and seconds > 0
    assert BATCHES == (1, 16, 17)
    assert len(engine.params) == 34
    # the rounds run one after another, each batch wholly in flight at once
    assert engine.peaks[0] == 1
    assert max(engine.peaks[1:17]) == 16
    assert max(engine.peaks[17:]) == 17


async def test_warm_up_samples_like_a_request_without_options(tokenizer: Any) -> None:
    """The server's defaults reach the engine (Qwen3's top_k/top_p: the kernels to build)."""
    engine = RecordingEngine(tokenizer)
    await warm_up(gateway_with(engine), batches=(1,))
    (params,) = engine.params
    assert params.max_tokens == MAX_TOKENS
    assert params.top_k == 20
    assert 0 < params.top_p < 1.0
    assert engine.checks == 1  # the own detokenizer's start-up check is not a request's
    text = tokenizer.decode(engine.prompts[0])
    assert "Hello" in text and "<|im_start|>assistant" in text


async def test_a_failed_warm_up_is_logged_not_raised(
    tokenizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine = RecordingEngine(tokenizer, fail=True)
    with caplog.at_level(logging.WARNING, logger="app.warmup"):
        assert await warm_up(gateway_with(engine)) is None
    assert "warm-up failed, serving without it: engine said no" in caplog.text


FRESH_PROCESS = """
import asyncio, sys, types
from transformers import AutoTokenizer
from app.chat.normalize import Defaults
from app.warmup import warm_up

class Engine:
    tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
    async def generate(self, prompt, params, request_id, arrival_time=None):
        yield None

before = "anyio._backends._asyncio" in sys.modules
asyncio.run(warm_up(types.SimpleNamespace(engine=Engine(), defaults=Defaults()), (1,)))
print(before, "anyio._backends._asyncio" in sys.modules)
"""


def test_warm_up_loads_anyio_backend_before_the_first_stream(tiny_dir: Any) -> None:
    """In a fresh process: Starlette's first streamed response would import it (12 ms)."""
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, str(tiny_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]
