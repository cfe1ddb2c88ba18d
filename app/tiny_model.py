"""Write small, randomly initialised Qwen3 checkpoints for tests and benchmarks.

`write_tiny_model(directory, preset)` produces a complete Hugging Face model directory
(`config.json`, `generation_config.json`, `model.safetensors`, `tokenizer.json`,
`tokenizer_config.json`) for `Qwen3ForCausalLM` that both `transformers` and vLLM load:

* ``"tiny"``: 2 layers, hidden size 128, a ~1k-token byte-level BPE tokenizer. Loads in
  vLLM on a laptop CPU in seconds; outputs are gibberish but every id decodes.
* ``"qwen3-0.6b"``: Qwen3-0.6B's exact architecture (28 layers, hidden 1024, vocab 151936)
  with random weights, for throughput measurements without downloading real weights.
  Its tokenizer is padded with synthetic merges so that every id < 151936 decodes, and
  all but 0.15% of them to whole characters (a real Qwen vocabulary: 0.95%).

The tokenizer is a byte-level BPE (all 256 bytes in the base alphabet, so any text
round-trips) with Qwen3's special tokens and a Qwen3-compatible ChatML chat template
(tools, tool calls, tool responses, reasoning content, ``enable_thinking``).

Everything is deterministic: the same preset and seed give byte-identical files.
Heavy libraries (torch, transformers, tokenizers) are imported inside the functions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from app.tiny_presets import (
    ADDED_TOKENS,
    EOS_TOKEN,
    PAD_TOKEN,
    PRESETS,
    SPECIAL_TOKENS,
    ModelPreset,
    get_preset,
)
from app.tiny_template import CHAT_TEMPLATE
from app.tiny_tokenizer import build_tokenizer

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "ADDED_TOKENS",
    "CHAT_TEMPLATE",
    "PRESETS",
    "SPECIAL_TOKENS",
    "ModelPreset",
    "build_tokenizer",
    "write_tiny_model",
]


def _write_tokenizer(tokenizer: Tokenizer, spec: ModelPreset, directory: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    hf_tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        bos_token=None,
        unk_token=None,
        chat_template=CHAT_TEMPLATE,
        model_max_length=spec.max_position_embeddings,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    # save_jinja_files=False keeps the chat template inside tokenizer_config.json.
    hf_tokenizer.save_pretrained(str(directory), save_jinja_files=False)
    config_path = directory / "tokenizer_config.json"
    config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(
        tokenizer_class="PreTrainedTokenizerFast",
        add_bos_token=False,
        add_eos_token=False,
        add_prefix_space=False,
        bos_token=None,
        unk_token=None,
        errors="replace",
        chat_template=CHAT_TEMPLATE,
        # Transformers 4 reads this key; v5 maps it to extra_special_tokens. (v5 writes
        # extra_special_tokens as a list, which v4 expects to be a dict, so drop that.)
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    config.pop("extra_special_tokens", None)
    config_path.write_text(
        json.dumps(config, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )


def _model_config(spec: ModelPreset, token_ids: dict[str, int]) -> Any:
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        hidden_act="silu",
        max_position_embeddings=spec.max_position_embeddings,
        initializer_range=spec.init_std,
        rms_norm_eps=spec.rms_norm_eps,
        use_cache=True,
        tie_word_embeddings=spec.tie_word_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
        attention_bias=False,
        attention_dropout=0.0,
        use_sliding_window=False,
        sliding_window=None,
        max_window_layers=spec.num_hidden_layers,
        bos_token_id=None,
        eos_token_id=token_ids[EOS_TOKEN],
        pad_token_id=token_ids[PAD_TOKEN],
        dtype=spec.dtype,
        architectures=["Qwen3ForCausalLM"],
    )


def _write_model(spec: ModelPreset, token_ids: dict[str, int], seed: int, directory: Path) -> None:
    import inspect

    import torch
    from transformers import Qwen3ForCausalLM

    config = _model_config(spec, token_ids)
    dtype = getattr(torch, spec.dtype)
    # Build on the meta device (no slow default init), then allocate and fill the
    # parameters from one seeded generator in a fixed order.
    with torch.device("meta"):
        model = Qwen3ForCausalLM(config)
    model = model.to(dtype=dtype).to_empty(device="cpu")
    if spec.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    generator = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(mean=0.0, std=spec.init_std, generator=generator)
        # Non-persistent rotary buffers were left uninitialised by to_empty().
        model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    model.eval()
    kwargs: dict[str, Any] = {}
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        kwargs["safe_serialization"] = True  # transformers < 5; v5 always writes safetensors
    model.save_pretrained(str(directory), **kwargs)


def _finish_configs(spec: ModelPreset, token_ids: dict[str, int], directory: Path) -> None:
    """Add legacy keys to config.json and write a sampling-free generation_config.json."""
    import transformers

    config_path = directory / "config.json"
    config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    # Keys that transformers < 5 (and the vLLM versions built on it) read.
    config["torch_dtype"] = spec.dtype
    config["dtype"] = spec.dtype
    config["rope_theta"] = spec.rope_theta
    config["rope_scaling"] = None
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    generation_config = {
        "bos_token_id": None,
        "eos_token_id": [token_ids[EOS_TOKEN], token_ids[PAD_TOKEN]],
        "pad_token_id": token_ids[PAD_TOKEN],
        "transformers_version": transformers.__version__,
    }
    (directory / "generation_config.json").write_text(
        json.dumps(generation_config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


_WRITTEN_FILES: Final = frozenset(
    {
        "config.json",
        "generation_config.json",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
    }
)


def write_tiny_model(directory: str | Path, preset: str = "tiny", seed: int = 0) -> Path:
    """Write a randomly initialised `Qwen3ForCausalLM` model directory and return its path.

    The directory (created if needed) holds config.json, generation_config.json,
    model.safetensors (bf16; byte-identical for the same preset and seed),
    tokenizer.json and tokenizer_config.json (with the chat template).
    """
    spec = get_preset(preset)
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer(spec)
    token_ids: dict[str, int] = {}
    for token in ADDED_TOKENS:
        token_id = tokenizer.token_to_id(token)
        if token_id is None:  # pragma: no cover - added just above
            raise RuntimeError(f"{token} is missing from the tokenizer")
        token_ids[token] = token_id
    _write_tokenizer(tokenizer, spec, path)
    _write_model(spec, token_ids, seed, path)
    _finish_configs(spec, token_ids, path)
    for file in path.iterdir():
        if file.is_file() and (file.name in _WRITTEN_FILES or file.suffix == ".safetensors"):
            file.chmod(0o644)  # save_pretrained writes the weights with mode 0600
    return path
