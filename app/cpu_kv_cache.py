"""On a CPU, a KV cache sized for the model instead of for the machine.

vLLM's CPU backend sizes its KV cache as it would a GPU's: `--gpu-memory-utilization`
(0.92 by default) of the machine's RAM, less what the worker already holds. On a 24 GiB
box that is 22 GiB for a two-layer demo model, and on a laptop it leaves the desktop
nothing. Where the user sized the cache in none of vLLM's ways (`VLLM_CPU_KVCACHE_SPACE`,
`--kv-cache-memory-bytes`, `--gpu-memory-utilization`), the gateway asks for room for one
full-length sequence and a tenth more, and at least `FLOOR_BYTES` (vLLM's CPU default
before it followed the GPU's rule), or a quarter of RAM where that is less. Where that
would take more than half of RAM, or the model's length can't be read from its
`config.json`, vLLM's own rule stays.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.engine import device_type

if TYPE_CHECKING:
    from vllm.engine.arg_utils import AsyncEngineArgs

logger = logging.getLogger(__name__)

GiB = 1 << 30
FLOOR_BYTES = 4 * GiB
SIZING_ENV = "VLLM_CPU_KVCACHE_SPACE"


def kv_bytes_per_token(config: Mapping[str, Any]) -> int | None:
    """Keys and values of one token over all layers, from a Hugging Face `config.json`."""
    try:
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    dtype = str(config.get("dtype") or config.get("torch_dtype") or "bfloat16")
    width = 4 if "32" in dtype else 2
    return 2 * layers * kv_heads * head_dim * width


def _scaled(config: Mapping[str, Any]) -> bool:
    """RoPE scaling can stretch vLLM's derived length past `max_position_embeddings`."""
    for key in ("rope_scaling", "rope_parameters"):
        scaling = config.get(key)
        if isinstance(scaling, Mapping) and scaling.get("rope_type", "default") != "default":
            return True
    return False


def default_kv_cache_bytes(
    config: Mapping[str, Any], max_model_len: int | None, total_ram: int
) -> int | None:
    """The cache the gateway asks for, or None to leave vLLM's rule (see the module)."""
    per_token = kv_bytes_per_token(config)
    if max_model_len is None and _scaled(config):
        return None
    length = max_model_len or config.get("max_position_embeddings")
    if per_token is None or not isinstance(length, int) or length <= 0:
        return None
    size = max(min(FLOOR_BYTES, total_ram // 4), per_token * length * 11 // 10)
    return size if size <= total_ram // 2 else None


def user_sized(engine_args: AsyncEngineArgs, environ: Mapping[str, str]) -> bool:
    """Whether the user chose the cache's size (an explicit 0.92 reads as vLLM's default)."""
    if environ.get(SIZING_ENV, "") != "":
        return True
    if getattr(engine_args, "kv_cache_memory_bytes", None) is not None:
        return True
    defaults = {f.name: f.default for f in dataclasses.fields(engine_args)}
    return bool(engine_args.gpu_memory_utilization != defaults.get("gpu_memory_utilization"))


def _total_ram() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _model_config(model: str) -> dict[str, Any]:
    try:
        loaded = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def size_cpu_kv_cache(engine_args: AsyncEngineArgs, environ: Mapping[str, str]) -> int | None:
    """On a CPU the user left unsized, set `kv_cache_memory_bytes`; the bytes set, or None."""
    if device_type() != "cpu" or user_sized(engine_args, environ):
        return None
    config = _model_config(str(engine_args.model))
    if str(getattr(engine_args, "dtype", "auto")) in ("float32", "float"):
        config["dtype"] = "float32"  # `--dtype float32`: the cache is kept in it too
    size = default_kv_cache_bytes(config, engine_args.max_model_len, _total_ram())
    if size is None:
        return None
    engine_args.kv_cache_memory_bytes = size
    per_token = kv_bytes_per_token(config) or 1
    logger.info(
        "CPU KV cache: %.1f GiB, room for %d tokens (set %s in GiB or --kv-cache-memory-bytes "
        "to choose; vLLM's own rule takes --gpu-memory-utilization of RAM)",
        size / GiB,
        size // per_token,
        SIZING_ENV,
    )
    return size
