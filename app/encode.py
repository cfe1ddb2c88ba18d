"""Tokenizing on the serving path: long texts in pieces side by side, the longest off the
event loop."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from app.cpus import usable_cpus
from app.encode_pieces import backend_for, cut, encode_each
from app.engine import Tokenizer

OFF_LOOP_CHARS: Final = 2000
"""Prompt texts at least this long are tokenized in a worker thread, not on the event loop.

The fast tokenizer releases the GIL while it encodes, so the loop goes on serving other
streams meanwhile: a 1024-token prompt of random ids of the Qwen3-sized test vocabulary
(3,353 characters) took 3.0 ms to encode on the 2-core CI machine, and with the encode in a
thread the loop's longest stall fell from 7.3 to 1.1 ms. Shorter prompts stay inline,
where the thread hop costs more than it frees: 0.6-0.8 ms there (a 1,630-character text in
two pieces, 1.1-1.2 ms inline against 1.7-2.0 ms through the thread).
"""

PIECE_CHARS: Final = 400
"""A text of at least twice this many characters is encoded in pieces of about this size
(at most `MAX_PIECES`, and no more than the CPUs this process may use), cut where the
tokenizer allows it (`app.encode_pieces`) and encoded side by side on `tokenizers`' own
thread pool (`encode_batch`): the same ids, sooner. Medians of 40 texts, HF `encode`
against pieces: on the 2-core CI machine a 1024-token prompt as the benchmark sends it
(1,630 characters) 3.1-3.4 ms against 1.1-1.2 ms in two pieces, a 256-token one (405
characters) 0.67-0.85 against 0.29-0.48 ms; on the H200's 16-core host a 3,279-character
text 3.3-4.5 ms against 1.1 ms in eight pieces, the benchmark's 1,620-character prompt
2.7-3.1 ms against 1.15-1.24 ms in four (`bench.encode_speed`, session 21)."""

MAX_PIECES: Final = 8


async def encode(tokenizer: Tokenizer, text: str, *, add_special_tokens: bool = False) -> list[int]:
    """`tokenizer.encode(text)`, in pieces where that is exact and pays, and in the encode
    thread when `text` is long."""
    if len(text) < OFF_LOOP_CHARS:
        return encode_sync(tokenizer, text, add_special_tokens=add_special_tokens)
    call = functools.partial(encode_sync, tokenizer, text, add_special_tokens=add_special_tokens)
    return await asyncio.get_running_loop().run_in_executor(_encoder(), call)


def encode_sync(tokenizer: Tokenizer, text: str, *, add_special_tokens: bool = False) -> list[int]:
    """`tokenizer.encode(text)` on this thread, in pieces encoded side by side where that
    gives the same ids."""
    count = min(MAX_PIECES, len(text) // PIECE_CHARS, usable_cpus())
    backend = None if add_special_tokens or count < 2 else backend_for(tokenizer)
    if backend is not None:
        pieces = cut(text, count)
        if len(pieces) > 1:
            return encode_each(backend, pieces)
    return tokenizer.encode(text, add_special_tokens=add_special_tokens)


_ENCODER: ThreadPoolExecutor | None = None


def _encoder() -> ThreadPoolExecutor:
    """One thread per process for the long encodes, as `vllm serve` has one for its
    tokenizer: they run one at a time (one thread keeps up with hundreds of long prompts
    a second), beside the loop's own short ones, which only read the tokenizer too."""
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode")
    return _ENCODER
