"""Tokenizing on the serving path: short texts inline, long ones off the event loop."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from app.encode_pieces import backend_for, cut
from app.engine import Tokenizer

OFF_LOOP_CHARS: Final = 2000
"""Prompt texts at least this long are tokenized in a worker thread, not on the event loop.

The fast tokenizer releases the GIL while it encodes, so the loop goes on serving other
streams meanwhile: a 1024-token prompt of random ids of the Qwen3-sized test vocabulary
(3,353 characters) took 3.0 ms to encode on the 2-core CI machine, and with the encode in a
thread the loop's longest stall fell from 7.3 to 1.1 ms. Shorter prompts stay inline,
where the thread hop would cost about as much as the encode.
"""


async def encode(tokenizer: Tokenizer, text: str, *, add_special_tokens: bool = False) -> list[int]:
    """`tokenizer.encode(text)`, in the encode thread when `text` is long."""
    if len(text) < OFF_LOOP_CHARS:
        return tokenizer.encode(text, add_special_tokens=add_special_tokens)
    call = functools.partial(encode_long, tokenizer, text, add_special_tokens=add_special_tokens)
    return await asyncio.get_running_loop().run_in_executor(_encoder(), call)


PIECE_CHARS: Final = 1000
"""A long text is encoded in pieces of about this many characters, at most `MAX_PIECES`,
on `tokenizers`' own thread pool (`encode_batch`), where the tokenizer allows it
(`app.encode_pieces`): the same ids. A 1024-token prompt (3,276 characters, 2,059 tokens
re-encoded) took 1.1 ms in 2 or 4 pieces against 2.0 ms whole, medians on the 2-core CI
machine; more cores take more pieces at once."""

MAX_PIECES: Final = 4


def encode_long(tokenizer: Tokenizer, text: str, *, add_special_tokens: bool = False) -> list[int]:
    """`tokenizer.encode(text)`, in pieces encoded side by side where that gives the same ids."""
    count = min(MAX_PIECES, len(text) // PIECE_CHARS)
    backend = None if add_special_tokens or count < 2 else backend_for(tokenizer)
    if backend is not None:
        pieces = cut(text, count)
        if len(pieces) > 1:
            encodings = backend.encode_batch(pieces, add_special_tokens=False)
            return [token for encoding in encodings for token in encoding.ids]
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
