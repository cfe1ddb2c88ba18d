"""Tests for app.tiny_model: the random Qwen3 checkpoints and their tokenizer (the chat
template's tests: test_tiny_template.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from app.tiny_model import (
    ADDED_TOKENS,
    CHAT_TEMPLATE,
    PRESETS,
    SPECIAL_TOKENS,
    build_tokenizer,
    write_tiny_model,
)

# ---------------------------------------------------------------------------- presets


def test_presets_architecture() -> None:
    tiny = PRESETS["tiny"]
    assert (tiny.num_hidden_layers, tiny.hidden_size, tiny.intermediate_size) == (2, 128, 256)
    assert (tiny.num_attention_heads, tiny.num_key_value_heads, tiny.head_dim) == (2, 1, 64)
    assert tiny.vocab_size % 64 == 0 and tiny.vocab_size >= tiny.tokenizer_size

    qwen = PRESETS["qwen3-0.6b"]
    assert (qwen.num_hidden_layers, qwen.hidden_size, qwen.intermediate_size) == (28, 1024, 3072)
    assert (qwen.num_attention_heads, qwen.num_key_value_heads, qwen.head_dim) == (16, 8, 128)
    assert qwen.vocab_size == qwen.tokenizer_size == 151936
    assert qwen.max_position_embeddings == 40960

    # the tiny model's layers with Qwen3's tokenizer, for memory measurements on a CPU
    big = PRESETS["tiny-qwen3-vocab"]
    assert (big.num_hidden_layers, big.hidden_size, big.head_dim) == (2, 128, 64)
    assert big.vocab_size == big.tokenizer_size == qwen.tokenizer_size
    for preset in PRESETS.values():
        assert preset.rope_theta == 1e6
        assert preset.rms_norm_eps == 1e-6
        assert preset.tie_word_embeddings
        assert preset.dtype == "bfloat16"


def test_unknown_preset_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown preset"):
        write_tiny_model(tmp_path, "qwen3-72b")


def test_tiny_files_and_config(tiny_dir: Path) -> None:
    names = {p.name for p in tiny_dir.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    } <= names
    config = json.loads((tiny_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"]
    assert config["model_type"] == "qwen3"
    assert config["num_hidden_layers"] == 2
    assert config["hidden_size"] == 128
    assert config["intermediate_size"] == 256
    assert config["num_attention_heads"] == 2
    assert config["num_key_value_heads"] == 1
    assert config["head_dim"] == 64
    assert config["max_position_embeddings"] == 4096
    assert config["rope_theta"] == 1e6
    assert config["rope_parameters"]["rope_theta"] == 1e6
    assert config["tie_word_embeddings"] is True
    assert config["dtype"] == config["torch_dtype"] == "bfloat16"
    assert config["vocab_size"] == PRESETS["tiny"].vocab_size == 1024


def test_generation_config_has_eos_and_no_sampling_values(tiny_dir: Path, tokenizer: Any) -> None:
    generation = json.loads((tiny_dir / "generation_config.json").read_text())
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert generation["eos_token_id"] == [im_end, endoftext]
    assert generation["bos_token_id"] is None
    for key in ("temperature", "top_p", "top_k", "do_sample", "repetition_penalty", "min_p"):
        assert key not in generation


def test_hf_model_loads_and_runs(tiny_dir: Path, tokenizer: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert model.dtype == torch.bfloat16
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    ids = tokenizer.encode("Hello, how are you?", return_tensors="pt")
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], 1024)
    assert torch.isfinite(logits.float()).all()


def test_weights_are_deterministic_for_a_seed(tmp_path: Path, tiny_dir: Path) -> None:
    again = write_tiny_model(tmp_path / "again", "tiny", seed=0)
    other = write_tiny_model(tmp_path / "other", "tiny", seed=1)
    weights = (tiny_dir / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == weights
    assert (other / "model.safetensors").read_bytes() != weights
    for name in (
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ):
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes()
        assert (other / name).read_bytes() == (tiny_dir / name).read_bytes()


# -------------------------------------------------------------------------- tokenizer


def test_tokenizer_class_and_size(tokenizer: Any) -> None:
    from transformers import PreTrainedTokenizerFast

    assert isinstance(tokenizer, PreTrainedTokenizerFast)
    assert len(tokenizer) == PRESETS["tiny"].tokenizer_size == 1024
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.bos_token is None
    assert tokenizer.chat_template == CHAT_TEMPLATE


@pytest.mark.parametrize(
    "text",
    [
        "Hello, world! How can I help you today?",
        "def add(a, b):\n    return a + b\n",
        "你好，世界！今天天气很好。",
        "emoji 😀🎉👍🏽 and a family 👨‍👩‍👧 ❤️",
        "  leading spaces, tabs\tand\r\nnewlines \x00\x7f ñ ü ß 日本語 العربية",
    ],
)
def test_tokenizer_round_trips_text(tokenizer: Any, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text


def test_added_tokens_are_single_ids_in_order(tokenizer: Any) -> None:
    bpe_size = PRESETS["tiny"].bpe_vocab_size
    for offset, token in enumerate(ADDED_TOKENS):
        assert tokenizer.encode(token, add_special_tokens=False) == [bpe_size + offset]
        assert tokenizer.convert_ids_to_tokens(bpe_size + offset) == token
    special = {str(t) for t in tokenizer.added_tokens_decoder.values() if t.special}
    assert special == set(SPECIAL_TOKENS)


def test_skip_special_tokens_keeps_think_and_tool_tags(tokenizer: Any) -> None:
    text = (
        "<|im_start|>assistant\n<think>\nhmm\n</think>\n\n<tool_call>\n{}\n</tool_call><|im_end|>"
    )
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=True) == (
        "assistant\n<think>\nhmm\n</think>\n\n<tool_call>\n{}\n</tool_call>"
    )


def test_every_tiny_id_decodes(tokenizer: Any) -> None:
    texts = tokenizer.batch_decode([[i] for i in range(PRESETS["tiny"].vocab_size)])
    assert all(isinstance(text, str) and text for text in texts)


def test_padded_ids_decode_to_whole_characters() -> None:
    """Random weights pick ids about uniformly; like a real Qwen vocabulary (0.95% of its
    151,643 BPE tokens end inside a UTF-8 character), nearly every id of the Qwen3-sized
    preset must decode to whole characters, or a benchmark's streams stall on held-back
    bytes that real output rarely has."""
    tokenizer = build_tokenizer("qwen3-0.6b")
    size = tokenizer.get_vocab_size(with_added_tokens=False)
    texts = tokenizer.decode_batch([[i] for i in range(size)])
    split = [i for i, text in enumerate(texts) if "\ufffd" in text]
    assert len(split) / size < 0.01
    assert max(split) < 1024  # only lone bytes and corpus-learned merges, no padding


def test_base_alphabet_covers_all_bytes() -> None:
    from tokenizers import pre_tokenizers

    vocab = build_tokenizer("tiny").get_vocab(with_added_tokens=False)
    assert set(pre_tokenizers.ByteLevel.alphabet()) <= set(vocab)


# ------------------------------------------------------------------------- qwen3-0.6b


@pytest.mark.slow
def test_qwen3_06b_preset(tmp_path: Path) -> None:
    from safetensors import safe_open
    from transformers import AutoTokenizer

    path = write_tiny_model(tmp_path / "qwen", "qwen3-0.6b", seed=0)
    config = json.loads((path / "config.json").read_text())
    expected = {
        "num_hidden_layers": 28,
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
        "rope_theta": 1e6,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "dtype": "bfloat16",
    }
    assert {key: config[key] for key in expected} == expected

    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        keys = set(weights.keys())
        embed = weights.get_slice("model.embed_tokens.weight")
        assert embed.get_shape() == [151936, 1024]
        assert embed.get_dtype() == "BF16"
    assert "lm_head.weight" not in keys
    assert len([k for k in keys if k.endswith("self_attn.q_proj.weight")]) == 28

    tokenizer = AutoTokenizer.from_pretrained(path)
    assert len(tokenizer) == 151936
    ids = random.Random(0).sample(range(151936), 2000) + list(range(151900, 151936))
    texts = tokenizer.batch_decode([[i] for i in ids])
    assert all(isinstance(text, str) and text for text in texts)
    assert tokenizer.convert_ids_to_tokens(151935) == "</tool_response>"
    assert tokenizer.convert_ids_to_tokens(151936 - len(ADDED_TOKENS)) == "<|endoftext|>"
    text = "Hello 你好 😀 def f(): return 1"
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text
    generation = json.loads((path / "generation_config.json").read_text())
    assert generation["eos_token_id"] == [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]
