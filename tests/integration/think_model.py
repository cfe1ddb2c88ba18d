"""A tiny Qwen3 checkpoint trained to *really* think, for end-to-end reasoning tests.

`write_think_model(directory)` writes the random ``"tiny"`` model of `app.tiny_model` and
trains it briefly (plain torch on the CPU: about 25 s of one core) on synthetic
Qwen3-format chats (English/Chinese/random user turns, system prompts, tools, several
turns, prompts of up to ~700 tokens), so that served with greedy decoding (and, nearly
always, with Qwen3's recommended sampling ``temperature=0.6, top_p=0.95, top_k=20``) the
model answers any user prompt:

* thinking mode (generation prompt ``<|im_start|>assistant\\n``, i.e. ``enable_thinking``
  unset or true)::

      <think>\\n{THINK_TEXT}\\n</think>\\n\\n{ANSWER_TEXT}<|im_end|>

* non-thinking mode (``enable_thinking=False``: the prompt already ends with
  ``<think>\\n\\n</think>\\n\\n``)::

      {ANSWER_TEXT}<|im_end|>

* thinking mode cut by a thinking budget (the prompt, ``<think>\\n``, the first tokens of
  THINK_TEXT, then a forced ``\\n</think>\\n\\n``)::

      {ANSWER_TEXT}<|im_end|>

`<think>`/`</think>` are single non-special tokens (they survive skip_special_tokens);
``<|im_end|>`` is the EOS token. THINK_TEXT is made of 39 distinct tokens, none of them in
ANSWER_TEXT, so that each next token is easy to get right (also when sampling).

The result is deterministic for a seed (and number of steps) on a given machine/torch
build, and cached: a stamp file in the directory records what wrote it, so a second call
with the same arguments returns at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from app.tiny_model import write_tiny_model
from tests.integration.think_chats import ANSWER_TEXT, THINK_TEXT, Examples, render_prompt

__all__ = [
    "ANSWER_TEXT",
    "DEFAULT_STEPS",
    "STAMP",
    "STAMP_FILE",
    "THINK_TEXT",
    "render_prompt",
    "write_think_model",
]

STAMP: Final[str] = "think-model-v3"
"""Version of the training recipe; bump it whenever the recipe or the texts change."""

STAMP_FILE: Final[str] = "think_model.stamp.json"
DEFAULT_STEPS: Final[int] = 120
LEARNING_RATE: Final[float] = 4e-3
WARMUP_STEPS: Final[int] = 20
TRAIN_THREADS: Final[int] = 1
"""Intra-op threads while training (THINK_MODEL_THREADS overrides). The weights come out
the same with 1 or 2 threads, but 2 OpenMP threads slow down 5-10x whenever anything else
runs on a small machine (a vLLM engine, another test worker), so 1 is the default."""

# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _torch_settings(threads: int) -> Iterator[None]:
    """Deterministic CPU settings and a private RNG state, all restored afterwards."""
    import torch

    old_threads = torch.get_num_threads()
    old_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        torch.use_deterministic_algorithms(old_deterministic)
        torch.set_num_threads(old_threads)


def _train(directory: Path, seed: int, steps: int) -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    pad_id = int(tokenizer.pad_token_id)
    model = Qwen3ForCausalLM.from_pretrained(
        str(directory), dtype=torch.float32, attn_implementation="sdpa"
    )
    save_dtype = getattr(torch, str(json.loads((directory / "config.json").read_text())["dtype"]))
    torch.manual_seed(seed)
    model.train()
    examples = Examples(tokenizer, seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.98), weight_decay=0.0
    )

    def lr_factor(step: int) -> float:
        if step < WARMUP_STEPS:
            return (step + 1) / WARMUP_STEPS
        progress = (step - WARMUP_STEPS) / max(1, steps - WARMUP_STEPS)
        return 0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    losses: list[float] = []
    batches = examples.batches()
    for _ in range(steps):
        batch = next(batches)
        size, length = len(batch), max(len(ids) for ids, _ in batch)
        # Right padding needs no attention mask (causal attention never looks ahead).
        input_ids = torch.full((size, length), pad_id, dtype=torch.long)
        labels = torch.full((size, length), -100, dtype=torch.long)
        for row, (ids, trained) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            # labels[t] is the target of position t-1 (the model shifts them itself).
            targets = [token if flag else -100 for token, flag in zip(ids, trained, strict=True)]
            labels[row, : len(ids)] = torch.tensor(targets)
        out = model(input_ids=input_ids, labels=labels)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(out.loss.item())

    model.eval()
    model.to(save_dtype)
    # save_pretrained rewrites config.json (dropping app.tiny_model's legacy keys), so
    # save into a scratch directory and move only the weights over.
    with tempfile.TemporaryDirectory(dir=directory, prefix=".think-save-") as scratch:
        model.save_pretrained(scratch, safe_serialization=True)
        for old in directory.glob("model*.safetensors*"):
            old.unlink()
        for new in Path(scratch).glob("model*.safetensors*"):
            shutil.move(str(new), directory / new.name)
            (directory / new.name).chmod(0o644)
    return {"final_loss": sum(losses[-20:]) / min(20, len(losses)), "first_loss": losses[0]}


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on `directory` (several test workers may build the same model)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with (directory / ".think_model.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_think_model(directory: str | Path, *, seed: int = 0, steps: int | None = None) -> Path:
    """Write (or reuse) the trained thinking tiny model in `directory`; return its path.

    The stamp file `think_model.stamp.json` records STAMP, the seed and the steps; when
    it matches (and config.json exists) nothing is done. Otherwise the random tiny model
    is (re)written with `seed` and trained for `steps` (default DEFAULT_STEPS) steps.
    """
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    steps = DEFAULT_STEPS if steps is None else steps
    wanted = {"stamp": STAMP, "seed": seed, "steps": steps}
    stamp_path = path / STAMP_FILE
    with _locked(path):
        if (path / "config.json").is_file() and stamp_path.is_file():
            try:
                stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
            except ValueError:
                stamp = {}
            if all(stamp.get(key) == value for key, value in wanted.items()):
                return path
        stamp_path.unlink(missing_ok=True)
        write_tiny_model(path, "tiny", seed=seed)
        start, cpu_start = time.perf_counter(), time.process_time()
        threads = int(os.environ.get("THINK_MODEL_THREADS") or TRAIN_THREADS)
        with _torch_settings(threads):
            stats = _train(path, seed, steps)
        stats["train_seconds"] = round(time.perf_counter() - start, 2)
        stats["train_cpu_seconds"] = round(time.process_time() - cpu_start, 2)
        stamp_path.write_text(
            json.dumps({**wanted, **stats}, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    return path
