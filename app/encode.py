"""Tokenizing on the serving path: through `fastokens` where it is attached
(`app.fast_encode`), else long texts in pieces side by side and the texts of a wave of
requests together; the longest off the event loop, a conversation's earlier turns
remembered."""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

from app import fast_encode
from app.cpus import usable_cpus
from app.encode_pieces import (
    backend_for,
    cut,
    encode_batch,
    encode_each,
    joined_ids,
    once_per_tokenizer,
)
from app.encode_turns import TurnCache, boundary_tokens, joined, lookup, sources, split
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

FAST_OFF_LOOP_CHARS: Final = 50_000
"""Texts at least this long go to the encode thread when `fastokens` encodes them
(`app.fast_encode`), shorter ones stay on the loop: 50,000 characters take about 2 ms
there on the 2-core CI machine, the thread hop 0.1-0.4 ms."""

_T = TypeVar("_T")


TurnTally = Callable[[int, int], None]
"""Told a split prompt's tokens whose ids were remembered, and those encoded for it."""


async def encode(
    tokenizer: Tokenizer,
    text: str,
    *,
    add_special_tokens: bool = False,
    tally: TurnTally | None = None,
) -> list[int]:
    """`tokenizer.encode(text)`: by `fastokens` where it is attached, else in pieces where
    that is exact and pays; texts that may be cut are split at their added tokens, the parts
    seen before remembered (a conversation's earlier turns; `tally` hears how many tokens
    were and were not), and, without `fastokens`, the new parts that arrive together (a
    wave of requests) encoded together (`_Wave`), the longest in the encode thread."""
    fast = None if add_special_tokens else fast_encode.fast_encoder(tokenizer)
    backend = None
    if not add_special_tokens and len(text) >= 2 * PIECE_CHARS:
        backend = backend_for(tokenizer)
    if backend is not None:
        return await _encode_turns(tokenizer, backend, text, tally, fast)
    if fast is not None:
        return (await _fast(fast, [text]))[0]
    call = functools.partial(encode_sync, tokenizer, text, add_special_tokens=add_special_tokens)
    return await _off_loop_when_long(len(text), call)


async def _fast(fast: Any, texts: list[str]) -> list[list[int]]:
    """The texts' ids from `fastokens`: on the loop, or in the encode thread when long."""
    call = functools.partial(fast_encode.encode_texts, fast, texts)
    if sum(map(len, texts)) < FAST_OFF_LOOP_CHARS:
        return call()
    return await asyncio.get_running_loop().run_in_executor(_encoder(), call)


async def _off_loop_when_long(chars: int, call: Callable[[], _T]) -> _T:
    """`call()` on the event loop below OFF_LOOP_CHARS characters of text, in the encode
    thread otherwise."""
    if chars < OFF_LOOP_CHARS:
        return call()
    return await asyncio.get_running_loop().run_in_executor(_encoder(), call)


async def _encode_turns(
    tokenizer: Tokenizer, backend: Any, text: str, tally: TurnTally | None, fast: Any | None
) -> list[int]:
    """The ids of `text` from its parts between added tokens (`app.encode_turns`): the parts
    this process has seen are remembered; the new ones go to `fast` where there is one; else
    a single new one goes with the wave, several are encoded together (on the loop while
    short, in the encode thread otherwise)."""
    turns = _turns_for(tokenizer, backend)
    if turns is None:
        if fast is not None:
            return (await _fast(fast, [text]))[0]
        return await _wave().encode(backend, text)
    tokens, cache = turns
    parts = split(text, tokens)
    known, missing = lookup(parts, cache)
    if not missing:
        got = []
    elif fast is not None:
        got = await _fast(fast, missing)
    elif len(missing) == 1:
        got = [await _wave().encode(backend, missing[0])]
    else:  # together in one batch: the wave's batches hold one text per CPU
        call = functools.partial(encode_texts, backend, missing)
        got = await _off_loop_when_long(sum(map(len, missing)), call)
    for part, ids in zip(missing, got, strict=True):
        cache.put(part, ids)
        known[part] = ids
    if tally is not None:
        tally(*sources(parts, known, missing))
    return joined(parts, known)


_TURNS: weakref.WeakKeyDictionary[Any, tuple[dict[str, int], TurnCache] | None] = (
    weakref.WeakKeyDictionary()
)


def _turns_for(tokenizer: Any, backend: Any) -> tuple[dict[str, int], TurnCache] | None:
    """The added tokens to split at and the parts' cache of a tokenizer, made once; None
    where its texts may not be split at its added tokens (or it can't be remembered)."""

    def make() -> tuple[dict[str, int], TurnCache] | None:
        tokens = boundary_tokens(backend)
        return None if tokens is None else (tokens, TurnCache())

    return once_per_tokenizer(_TURNS, tokenizer, make, unkeyed=lambda: None)


def forget_turns(tokenizer: Any) -> None:
    """Forget the prompt parts this process remembers for `tokenizer` (benchmarks, tests)."""
    _TURNS.pop(tokenizer, None)


def encode_sync(tokenizer: Tokenizer, text: str, *, add_special_tokens: bool = False) -> list[int]:
    """`tokenizer.encode(text)` on this thread, in pieces encoded side by side where that
    gives the same ids. Whole or in pieces, a text goes straight to the `tokenizers`
    backend where `backend_for` vouches for it: a 128-token prompt (240 characters) took
    104-118 µs there against 224-280 µs through the HF tokenizer's `encode` on the 2-core
    box (312 against 430 µs with the 151,936-id tokenizer), the same ids."""
    backend = None if add_special_tokens else backend_for(tokenizer)
    if backend is not None:
        count = _piece_count(text, usable_cpus())
        return encode_each(backend, cut(text, count) if count >= 2 else [text])
    return tokenizer.encode(text, add_special_tokens=add_special_tokens)


def encode_texts(backend: Any, texts: list[str]) -> list[list[int]]:
    """The ids of each text, all of them in one `encode_batch` on `tokenizers`' thread pool:
    each text cut in pieces while there are more CPUs than texts, whole otherwise."""
    share = max(1, usable_cpus() // len(texts))
    pieces: list[str] = []
    counts: list[int] = []
    for text in texts:
        count = _piece_count(text, share)
        parts = cut(text, count) if count >= 2 else [text]
        pieces += parts
        counts.append(len(parts))
    encodings = encode_batch(backend, pieces)
    out: list[list[int]] = []
    start = 0
    for count in counts:
        out.append(joined_ids(encodings[start : start + count]))
        start += count
    return out


def _piece_count(text: str, cpus: int) -> int:
    """How many pieces `text` is cut into with `cpus` CPUs to itself (below 2: whole)."""
    return min(MAX_PIECES, len(text) // PIECE_CHARS, cpus)


Waiting = tuple[Any, str, "asyncio.Future[list[int]]"]


class _Wave:
    """Texts to encode that came while the last ones were being encoded, taken together.

    A wave of requests (a benchmark's burst, a batch job) used to be encoded one prompt
    after another on each HTTP worker's event loop, and the last of 64 waited for the 63
    before it. Here the first text is taken on the next turn of the loop (with any that
    came in the same turn); while a batch is in the encode thread, the loop goes on and
    the texts that arrive wait for the next batch. A batch holds at most one text per
    usable CPU: all of a batch's texts wait for its last, so a larger one only delays the
    first. One text alone and shorter than OFF_LOOP_CHARS is encoded on the loop, as
    before: no thread hop at concurrency 1.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: list[Waiting] = []
        self.busy = False

    async def encode(self, backend: Any, text: str) -> list[int]:
        future: asyncio.Future[list[int]] = self.loop.create_future()
        self.waiting.append((backend, text, future))
        if not self.busy:
            self.busy = True
            self.loop.call_soon(self._next)
        return await future

    def _next(self) -> None:
        cap = usable_cpus()
        batch, self.waiting = self.waiting[:cap], self.waiting[cap:]
        if not batch:
            self.busy = False
            return
        if len(batch) == 1 and len(batch[0][1]) < OFF_LOOP_CHARS:
            try:
                _settle(batch, _encode_batch(batch))
            except Exception as exc:
                _fail(batch, exc)
            if self.waiting:  # more than one CPU's worth came (one usable CPU): go on
                self.loop.call_soon(self._next)
            else:
                self.busy = False
            return
        job = self.loop.run_in_executor(_encoder(), _encode_batch, batch)
        job.add_done_callback(lambda done: self._done(batch, done))

    def _done(self, batch: list[Waiting], done: asyncio.Future[list[list[int]]]) -> None:
        if done.cancelled():  # the loop is closing
            for _, _, future in batch:
                future.cancel()
        elif (exc := done.exception()) is not None:
            _fail(batch, exc)
        else:
            _settle(batch, done.result())
        self._next()


def _encode_batch(batch: list[Waiting]) -> list[list[int]]:
    """Each waiting text's ids, in order (one `encode_batch` per tokenizer among them)."""
    ids: dict[int, list[int]] = {}
    backends = {id(backend): backend for backend, _, _ in batch}
    for key, backend in backends.items():
        index = [i for i, (b, _, _) in enumerate(batch) if id(b) == key]
        ids |= zip(index, encode_texts(backend, [batch[i][1] for i in index]), strict=True)
    return [ids[i] for i in range(len(batch))]


def _settle(batch: list[Waiting], results: list[list[int]]) -> None:
    for (_, _, future), ids in zip(batch, results, strict=True):
        if not future.done():  # its request may have gone (cancelled)
            future.set_result(ids)


def _fail(batch: list[Waiting], exc: BaseException) -> None:
    for _, _, future in batch:
        if not future.done():
            future.set_exception(exc)


_WAVE: _Wave | None = None


def _wave() -> _Wave:
    """The running loop's `_Wave` (one loop per process when serving)."""
    global _WAVE
    loop = asyncio.get_running_loop()
    if _WAVE is None or _WAVE.loop is not loop:
        _WAVE = _Wave(loop)
    return _WAVE


_ENCODER: ThreadPoolExecutor | None = None


def _encoder() -> ThreadPoolExecutor:
    """One thread per process for the long encodes, as `vllm serve` has one for its
    tokenizer: they run one at a time (one thread keeps up with hundreds of long prompts
    a second), beside the loop's own short ones, which only read the tokenizer too."""
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode")
    return _ENCODER
