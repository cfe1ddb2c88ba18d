"""Presets and token constants of the tiny Qwen3 checkpoints (see `app.tiny_model`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final


@dataclass(frozen=True)
class ModelPreset:
    """Architecture and tokenizer size of one preset."""

    name: str
    num_hidden_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    tokenizer_size: int
    """Total tokenizer size: BPE vocabulary plus the added tokens."""
    max_position_embeddings: int = 4096
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    dtype: str = "bfloat16"
    init_std: float = 0.02

    @property
    def vocab_size(self) -> int:
        """Embedding rows: the tokenizer size rounded up to a multiple of 64."""
        return math.ceil(self.tokenizer_size / 64) * 64

    @property
    def bpe_vocab_size(self) -> int:
        """Tokens of the BPE model itself (without the added tokens)."""
        return self.tokenizer_size - len(ADDED_TOKENS)


SPECIAL_TOKENS: Final[tuple[str, ...]] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Added with ``special=True``: dropped by ``skip_special_tokens=True`` decoding."""

NON_SPECIAL_ADDED_TOKENS: Final[tuple[str, ...]] = (
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)
"""Added with ``special=False`` (as in Qwen3): single ids that survive skip_special_tokens."""

ADDED_TOKENS: Final[tuple[str, ...]] = SPECIAL_TOKENS + NON_SPECIAL_ADDED_TOKENS
"""All added tokens, in id order, right after the BPE vocabulary."""

EOS_TOKEN: Final = "<|im_end|>"
PAD_TOKEN: Final = "<|endoftext|>"

_TINY: Final = ModelPreset(
    name="tiny",
    num_hidden_layers=2,
    hidden_size=128,
    intermediate_size=256,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=64,  # vLLM's CPU attention kernel rejects head_dim 16
    tokenizer_size=1024,
    max_position_embeddings=4096,
)

PRESETS: Final[dict[str, ModelPreset]] = {
    "tiny": _TINY,
    # the tiny model with Qwen3-0.6B's tokenizer size: what a process's tokenizer costs,
    # on a CPU (bench.front_end_memory)
    "tiny-qwen3-vocab": replace(_TINY, name="tiny-qwen3-vocab", tokenizer_size=151936),
    "qwen3-0.6b": ModelPreset(
        name="qwen3-0.6b",
        num_hidden_layers=28,
        hidden_size=1024,
        intermediate_size=3072,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        tokenizer_size=151936,
        max_position_embeddings=40960,
    ),
}


def get_preset(preset: str | ModelPreset) -> ModelPreset:
    if isinstance(preset, ModelPreset):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise ValueError(
            f"unknown preset {preset!r}; choose one of {', '.join(sorted(PRESETS))}"
        ) from None
