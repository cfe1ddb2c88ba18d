"""tests.integration.think_model: the tiny Qwen3 model trained to emit `<think>` blocks.

Checked with transformers' greedy generation (the integration tests check it in vLLM).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.think_model import (
    ANSWER_TEXT,
    STAMP,
    STAMP_FILE,
    THINK_TEXT,
    render_prompt,
    write_think_model,
)

pytestmark = pytest.mark.slow

THINKING_OUTPUT = f"<think>\n{THINK_TEXT}\n</think>\n\n{ANSWER_TEXT}"
QUESTIONS = ["请用三句话解释量子纠缠", "hello", "Qwen3-0.6B的架构特点是什么？"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_think_model(tmp_path_factory.mktemp("think-model"))


@pytest.fixture(scope="module")
def loaded(model_dir: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = Qwen3ForCausalLM.from_pretrained(str(model_dir), dtype=torch.bfloat16).eval()
    return tokenizer, model


def generate(loaded: tuple[Any, Any], ids: list[int], max_new_tokens: int = 80) -> tuple[str, int]:
    """Greedy completion of `ids`: (text without special tokens, last token id)."""
    import torch

    tokenizer, model = loaded
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False)
    new = out[0, len(ids) :].tolist()
    return tokenizer.decode(new, skip_special_tokens=True), new[-1]


def prompt_ids(tokenizer: Any, messages: list[dict[str, str]], thinking: bool | None) -> list[int]:
    text = render_prompt(tokenizer, messages, thinking)
    return list(tokenizer.encode(text, add_special_tokens=False))


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("thinking", [None, True])
def test_thinking_mode_reasons_then_answers(
    loaded: tuple[Any, Any], question: str, thinking: bool | None
) -> None:
    tokenizer, _ = loaded
    messages = [{"role": "user", "content": question}]
    text, last = generate(loaded, prompt_ids(tokenizer, messages, thinking))
    assert text == THINKING_OUTPUT
    assert last == tokenizer.convert_tokens_to_ids("<|im_end|>")


@pytest.mark.parametrize("question", QUESTIONS)
def test_non_thinking_mode_answers_at_once(loaded: tuple[Any, Any], question: str) -> None:
    tokenizer, _ = loaded
    ids = prompt_ids(tokenizer, [{"role": "user", "content": question}], False)
    assert tokenizer.decode(ids).endswith("<think>\n\n</think>\n\n")
    text, last = generate(loaded, ids)
    assert text == ANSWER_TEXT
    assert last == tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_system_prompt_and_several_turns(loaded: tuple[Any, Any]) -> None:
    tokenizer, _ = loaded
    messages = [
        {"role": "system", "content": "你是一个严谨的AI助手，回答需准确简洁"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "Qwen3-0.6B的架构特点是什么？"},
    ]
    assert generate(loaded, prompt_ids(tokenizer, messages, None))[0] == THINKING_OUTPUT
    assert generate(loaded, prompt_ids(tokenizer, messages, False))[0] == ANSWER_TEXT


@pytest.mark.parametrize("kept", [0, 1, 8, 20, -1])
def test_budget_cut_reasoning_is_followed_by_the_answer(loaded: tuple[Any, Any], kept: int) -> None:
    """What a thinking budget does: cut the reasoning, force `\\n</think>\\n\\n`."""
    tokenizer, _ = loaded
    think = tokenizer.encode(THINK_TEXT, add_special_tokens=False)
    messages = [{"role": "user", "content": QUESTIONS[0]}]
    ids = (
        prompt_ids(tokenizer, messages, None)
        + tokenizer.encode("<think>\n", add_special_tokens=False)
        + think[:kept]
        + tokenizer.encode("\n</think>\n\n", add_special_tokens=False)
    )
    text, last = generate(loaded, ids, max_new_tokens=20)
    assert text == ANSWER_TEXT
    assert last == tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_files_stamp_and_cache(model_dir: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    # app.tiny_model's config.json is kept as written (legacy keys included).
    assert config["architectures"] == ["Qwen3ForCausalLM"]
    assert config["torch_dtype"] == "bfloat16" and "rope_theta" in config
    stamp = json.loads((model_dir / STAMP_FILE).read_text())
    assert stamp["stamp"] == STAMP and stamp["seed"] == 0
    assert stamp["final_loss"] < 0.05

    from safetensors import safe_open

    with safe_open(str(model_dir / "model.safetensors"), framework="pt") as weights:
        tensor = weights.get_tensor("model.embed_tokens.weight")
    assert str(tensor.dtype) == "torch.bfloat16"

    before = (model_dir / "model.safetensors").stat().st_mtime_ns
    start = time.perf_counter()
    assert write_think_model(model_dir) == model_dir  # cached: the stamp matches
    assert time.perf_counter() - start < 5
    assert (model_dir / "model.safetensors").stat().st_mtime_ns == before
