"""Cutting a long prompt text into pieces that tokenize, one by one, to the ids of the whole.

Encoding a 1,024-token prompt is one of the larger steps before the engine sees it (1.6-1.9
ms of `tokenizers` on the 2-core CI machine, most of it the pre-tokenizer's regex), and one
`encode` call uses one core. `tokenizers`' `encode_batch` runs its texts on its own thread
pool, so a text cut where the pre-tokenizer would split it anyway comes back as the same
ids in a fraction of the time, when cores are free.

Where cutting is exact: before a single space that follows a printable, non-space
character and precedes a letter (`"word| word"`). Under the byte-level pre-tokenizers of
Qwen2/Qwen3 (`Split` with their regex, then `ByteLevel` without one) and GPT-2
(`ByteLevel` with its regex) no pre-token holds a non-space character followed by a space,
so a pre-token ends before the cut and the next one starts at it, in the whole text and in
the pieces alike; a one-space run followed by a letter looks ahead only inside its piece.
NFC neither composes nor reorders across a space, and BPE merges only inside a pre-token.
Added tokens are matched before all that; none may hold whitespace or strip it, so none
spans a cut or takes its space. Any other tokenizer shape (another regex, another model,
BPE dropout, a prefix space, truncation) is not cut: `backend_for` returns None for it.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable
from typing import Any, Final, TypeVar

QWEN2_SPLIT: Final = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
"""The pre-tokenizer regex in Qwen2's and Qwen3's `tokenizer.json`."""

_NORMALIZERS: Final = (None, {"type": "NFC"})

_V = TypeVar("_V")

_BACKENDS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def backend_for(tokenizer: Any) -> Any | None:
    """The `tokenizers.Tokenizer` behind a fast Hugging Face tokenizer when its texts may be
    cut as this module does, else None (worked out once per tokenizer)."""
    work_out = functools.partial(_checked_backend, tokenizer)
    return once_per_tokenizer(_BACKENDS, tokenizer, work_out, unkeyed=work_out)


def once_per_tokenizer(
    store: weakref.WeakKeyDictionary[Any, _V],
    tokenizer: Any,
    make: Callable[[], _V],
    *,
    unkeyed: Callable[[], _V],
) -> _V:
    """`store[tokenizer]`, made by `make()` the first time; `unkeyed()` for a tokenizer that
    is not weak-referenceable (it can't be a key)."""
    try:
        return store[tokenizer]
    except KeyError:
        pass
    except TypeError:
        return unkeyed()
    value = make()
    store[tokenizer] = value
    return value


def _checked_backend(tokenizer: Any) -> Any | None:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "encode_batch"):
        return None
    try:
        config = config_of(backend)
    except Exception:  # pragma: no cover - a backend that can't describe itself
        return None
    return backend if cuttable_config(config) else None


def config_of(backend: Any) -> dict[str, Any]:
    """The parts of a `tokenizers.Tokenizer`'s `tokenizer.json` that `cuttable_config`
    reads, taken from its components one by one (0.2 ms): `to_str()`, which writes the
    vocabulary and merges too, took 290 ms for Qwen3's 151,936 ids on the CI machine, and
    the first long prompt of each process would wait for it."""

    def state(part: Any) -> Any:
        return None if part is None else json.loads(part.__getstate__())

    model = backend.model
    added = backend.get_added_tokens_decoder().values()
    return {
        "model": {"type": type(model).__name__, "dropout": getattr(model, "dropout", None)},
        "normalizer": state(backend.normalizer),
        "pre_tokenizer": state(backend.pre_tokenizer),
        "truncation": backend.truncation,
        "padding": backend.padding,
        "added_tokens": [
            {"content": token.content, "lstrip": token.lstrip, "rstrip": token.rstrip}
            for token in added
        ],
    }


def cuttable_config(config: dict[str, Any]) -> bool:
    """Whether a `tokenizer.json` document describes a tokenizer that `cut` may cut."""
    model = config.get("model") or {}
    if model.get("type") != "BPE" or model.get("dropout") not in (None, 0, 0.0):
        return False
    if config.get("normalizer") not in _NORMALIZERS:
        return False
    if config.get("truncation") is not None or config.get("padding") is not None:
        return False
    if not _byte_level_pre_tokenizer(config.get("pre_tokenizer")):
        return False
    return all(_harmless_added(token) for token in config.get("added_tokens") or [])


def _byte_level_pre_tokenizer(pre: Any) -> bool:
    if not isinstance(pre, dict):
        return False
    if pre.get("type") == "ByteLevel":  # GPT-2's regex built in
        return pre.get("use_regex", True) is True and not pre.get("add_prefix_space", False)
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not isinstance(steps, list) or len(steps) != 2:
        return False
    split, byte_level = steps
    return (
        split.get("type") == "Split"
        and (split.get("pattern") or {}).get("Regex") == QWEN2_SPLIT
        and split.get("behavior") == "Isolated"
        and split.get("invert") is False
        and byte_level.get("type") == "ByteLevel"
        and byte_level.get("use_regex") is False
        and not byte_level.get("add_prefix_space", False)
    )


def _harmless_added(token: dict[str, Any]) -> bool:
    content = str(token.get("content", ""))
    return (
        bool(content)
        and not any(char.isspace() or not char.isprintable() for char in content)
        and not token.get("lstrip", False)
        and not token.get("rstrip", False)
    )


def can_cut_at(text: str, index: int) -> bool:
    """Whether `text[:index]` and `text[index:]` tokenize to the ids of `text` (see above)."""
    return (
        0 < index < len(text) - 1
        and text[index] == " "
        and text[index - 1] != " "
        and text[index - 1].isprintable()
        and text[index + 1].isalpha()
    )


def cut(text: str, count: int) -> list[str]:
    """`text` in at most `count` pieces of about equal length, each cut at the first place
    `can_cut_at` allows from its share's end on; fewer where there is none."""
    pieces: list[str] = []
    start = 0
    for share in range(1, count):
        index = max(start + 1, len(text) * share // count)
        while index < len(text) - 1 and not can_cut_at(text, index):
            index += 1
        if index >= len(text) - 1:
            break
        pieces.append(text[start:index])
        start = index
    pieces.append(text[start:])
    return pieces


def encode_each(backend: Any, pieces: list[str]) -> list[int]:
    """The ids of `pieces`, encoded side by side on `tokenizers`' thread pool
    (`encode_batch`), one piece's after the other's."""
    return joined_ids(encode_batch(backend, pieces))


def encode_batch(backend: Any, texts: list[str]) -> list[Any]:
    """`backend.encode_batch(texts)` without special tokens, through `encode_batch_fast`
    where the `tokenizers` release has it: the same ids without the character offsets,
    which nothing here reads. A 1,024-token prompt in two pieces on the CI machine: 1.15
    against 1.49 ms back to back (medians of 320), 2.08 against 2.19 ms with 10 ms idle
    before each (160); one whole text: no difference."""
    fast = getattr(backend, "encode_batch_fast", None)
    run = backend.encode_batch if fast is None else fast
    return list(run(texts, add_special_tokens=False))


def joined_ids(encodings: Any) -> list[int]:
    """The encodings' ids one after the other: lists extended, not a comprehension over
    every id (25 against 44 µs for a 1,024-id prompt in four pieces on the CI machine)."""
    ids: list[int] = []
    for encoding in encodings:
        ids += encoding.ids
    return ids
