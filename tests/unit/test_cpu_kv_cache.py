"""The CPU KV cache the gateway asks for when the user sized none."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from vllm.engine.arg_utils import AsyncEngineArgs

from app.cpu_kv_cache import (
    FLOOR_BYTES,
    GiB,
    default_kv_cache_bytes,
    kv_bytes_per_token,
    size_cpu_kv_cache,
    user_sized,
)

QWEN3_06B = {  # Qwen/Qwen3-0.6B's config.json, the fields that count here
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 1024,
    "max_position_embeddings": 40960,
    "torch_dtype": "bfloat16",
}
TINY = {"num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 64, "max_position_embeddings": 4096, "dtype": "bfloat16"}  # fmt: skip


def test_bytes_per_token() -> None:
    assert kv_bytes_per_token(QWEN3_06B) == 2 * 28 * 8 * 128 * 2  # 112 KiB
    assert kv_bytes_per_token(TINY) == 512
    no_head_dim = {k: v for k, v in QWEN3_06B.items() if k != "head_dim"}
    assert kv_bytes_per_token(no_head_dim) == 2 * 28 * 8 * 64 * 2  # hidden / heads
    assert kv_bytes_per_token({**TINY, "dtype": "float32"}) == 1024
    assert kv_bytes_per_token({"num_hidden_layers": 2}) is None
    assert kv_bytes_per_token({}) is None


def test_default_size() -> None:
    # a small model: the floor, or a quarter of a small machine's RAM
    assert default_kv_cache_bytes(TINY, None, 24 * GiB) == FLOOR_BYTES == 4 * GiB
    assert default_kv_cache_bytes(TINY, None, 6 * GiB) == 6 * GiB // 4
    # Qwen3-0.6B at its full 40,960 tokens: one sequence and a tenth more (4.8 GiB)
    full = default_kv_cache_bytes(QWEN3_06B, None, 16 * GiB)
    assert full == 114688 * 40960 * 11 // 10 and 4.8 * GiB < full < 4.9 * GiB
    # at the seeds' --max-model-len 6384 the floor holds 37,449 such tokens
    assert default_kv_cache_bytes(QWEN3_06B, 6384, 16 * GiB) == FLOOR_BYTES
    # more than half of RAM: vLLM's own rule stays
    assert default_kv_cache_bytes(QWEN3_06B, None, 8 * GiB) is None
    # unreadable config, or RoPE scaling that may stretch the length: vLLM's rule
    assert default_kv_cache_bytes({}, None, 24 * GiB) is None
    yarn = {**QWEN3_06B, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    assert default_kv_cache_bytes(yarn, None, 64 * GiB) is None
    assert default_kv_cache_bytes(yarn, 6384, 64 * GiB) == FLOOR_BYTES
    plain = {**TINY, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}
    assert default_kv_cache_bytes(plain, None, 24 * GiB) == FLOOR_BYTES


def test_what_counts_as_sized_by_the_user() -> None:
    args = AsyncEngineArgs(model="m")
    assert not user_sized(args, {})
    assert not user_sized(args, {"VLLM_CPU_KVCACHE_SPACE": ""})
    assert user_sized(args, {"VLLM_CPU_KVCACHE_SPACE": "2"})
    assert user_sized(AsyncEngineArgs(model="m", gpu_memory_utilization=0.5), {})
    assert user_sized(AsyncEngineArgs(model="m", kv_cache_memory_bytes=GiB), {})


def test_size_is_set_on_this_cpu_only_when_unsized(tmp_path: Path) -> None:
    from vllm.platforms import current_platform

    if str(current_platform.device_type) != "cpu":
        pytest.skip("the CPU platform's rule: this suite runs on vLLM's CPU build")
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    args = AsyncEngineArgs(model=str(tmp_path))
    assert size_cpu_kv_cache(args, {}) == args.kv_cache_memory_bytes
    assert args.kv_cache_memory_bytes is not None and args.kv_cache_memory_bytes <= FLOOR_BYTES
    # `--dtype float32` keeps the cache in 4-byte values: 1 MiB a token here, not the floor
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "num_hidden_layers": 2048}))
    wide = AsyncEngineArgs(model=str(tmp_path), dtype="float32", max_model_len=4096)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    expected = 4 * GiB * 11 // 10
    assert size_cpu_kv_cache(wide, {}) == (expected if expected <= ram // 2 else None)
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    chosen = AsyncEngineArgs(model=str(tmp_path))
    assert size_cpu_kv_cache(chosen, {"VLLM_CPU_KVCACHE_SPACE": "1"}) is None
    assert chosen.kv_cache_memory_bytes is None
    missing = AsyncEngineArgs(model=str(tmp_path / "nothing"))
    assert size_cpu_kv_cache(missing, {}) is None and missing.kv_cache_memory_bytes is None
