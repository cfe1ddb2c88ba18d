"""app.shared_tokenizer: the fork server's tokenizer, which the workers' renderers keep."""

from __future__ import annotations

import copy
import logging
import shutil
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.shared_tokenizer import ENV, TokenizerKey, is_shared, preload, preload_from_environment


def model_config(path: str, **changes: Any) -> types.SimpleNamespace:
    fields = {
        "skip_tokenizer_init": False,
        "tokenizer": path,
        "runner_type": "generate",
        "tokenizer_mode": "auto",
        "tokenizer_revision": None,
        "trust_remote_code": False,
        "renderer_num_workers": 1,
    }
    return types.SimpleNamespace(**(fields | changes))


@pytest.fixture
def tokenizer_dir(tiny_dir: Path, tmp_path: Path) -> Iterator[Path]:
    """The tiny tokenizer at a path of its own, and vLLM's tokenizer cache emptied after."""
    from vllm.tokenizers.registry import cached_get_tokenizer

    target = tmp_path / "tokenizer"
    target.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):
        shutil.copy(tiny_dir / name, target / name)
    yield target
    cached_get_tokenizer.cache_clear()


def test_the_key_is_what_vllm_reads_of_the_model_config() -> None:
    key = TokenizerKey.of(model_config("/models/q", renderer_num_workers=3))
    assert key == TokenizerKey("/models/q", "generate", "auto", None, False, copies=4)
    assert TokenizerKey.from_json(key.to_json()) == key
    assert TokenizerKey.of(model_config("/models/q", skip_tokenizer_init=True)) is None


def test_the_workers_renderer_gets_the_preloaded_pool_as_it_is(tokenizer_dir: Path) -> None:
    from vllm.tokenizers.hf import maybe_make_thread_pool
    from vllm.tokenizers.registry import cached_tokenizer_from_config

    key = TokenizerKey.of(model_config(str(tokenizer_dir)))
    assert key is not None
    loaded = preload(key)
    # what a worker's AsyncLLM asks vLLM's cache for: the preloaded tokenizer
    config = model_config(str(tokenizer_dir))
    assert cached_tokenizer_from_config(config) is loaded
    assert is_shared(loaded)
    # what vLLM's renderer does with it: a shallow copy, then a pool of deep copies
    renderer_copy = copy.copy(loaded)
    assert maybe_make_thread_pool(renderer_copy, key.copies) is renderer_copy
    # no new pool (a new pool is a new class, over new deep copies)
    assert type(renderer_copy) is type(loaded)
    assert is_shared(renderer_copy)
    from transformers import AutoTokenizer

    plain = AutoTokenizer.from_pretrained(tokenizer_dir)
    text = "hello world, hello tokenizer"
    assert renderer_copy.encode(text) == plain.encode(text)
    ids = plain.encode(text)
    assert renderer_copy.decode(ids) == plain.decode(ids)


def test_a_tokenizer_vllm_makes_no_pool_of_is_left_alone() -> None:
    from app.shared_tokenizer import share_pool

    other = object()
    assert share_pool(other, 2) is False
    assert type(other) is object and not is_shared(other)


def test_preload_from_environment(tokenizer_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert preload_from_environment({}) is False
    with caplog.at_level(logging.WARNING, logger="app.shared_tokenizer"):
        assert preload_from_environment({ENV: '{"tokenizer": 1}'}) is False
    assert "could not preload" in caplog.text
    key = TokenizerKey.of(model_config(str(tokenizer_dir)))
    assert key is not None
    assert preload_from_environment({ENV: key.to_json()}) is True
    from vllm.tokenizers.registry import cached_tokenizer_from_config

    assert is_shared(cached_tokenizer_from_config(model_config(str(tokenizer_dir))))


def test_preload_loads_fastokens_for_the_workers_when_they_use_it(tokenizer_dir: Path) -> None:
    from app import fast_encode

    key = TokenizerKey.of(model_config(str(tokenizer_dir)), fast=True)
    assert key is not None and key.fast
    loaded = preload(key)
    assert fast_encode.preloaded(copy.copy(loaded)) is not None
