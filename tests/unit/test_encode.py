"""app.encode: prompt texts encoded in pieces where that is exact and pays (as many as the
process's CPUs allow), inline below OFF_LOOP_CHARS and in the encode thread above it, and
a wave's texts together."""

from __future__ import annotations

import random
from typing import Any

import pytest

import app.encode as encode_module
from app.encode import MAX_PIECES, OFF_LOOP_CHARS, PIECE_CHARS, encode, encode_sync
from app.encode_pieces import backend_for


def _plain(tokenizer: Any) -> int:
    """How many ids come before the added tokens: texts of those ids hold none, so they
    are encoded as one part (`app.encode_turns` splits at added tokens)."""
    first_added = min(tokenizer.added_tokens_decoder)
    assert first_added == len(tokenizer) - len(tokenizer.added_tokens_decoder)
    return int(first_added)


class _Slow:
    """A tokenizer without a fast backend."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [len(text)]


class _Counting:
    """A fast tokenizer's backend that counts `encode_batch` calls."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        if name == "encode_batch_fast":  # counted as encode_batch (app.encode_pieces)
            raise AttributeError(name)
        return getattr(self.backend, name)

    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
        self.batches.append(len(texts))
        return self.backend.encode_batch(texts, add_special_tokens=add_special_tokens)


def test_backend_for_a_fast_tokenizer_is_worked_out_once(tokenizer: Any) -> None:
    assert backend_for(tokenizer) is tokenizer.backend_tokenizer
    assert backend_for(tokenizer) is tokenizer.backend_tokenizer
    assert backend_for(_Slow()) is None


def test_encode_sync_matches_encode_and_uses_pieces(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 4)
    rng = random.Random(9)
    text = tokenizer.decode([rng.randrange(_plain(tokenizer)) for _ in range(2000)])
    assert len(text) >= 2 * PIECE_CHARS
    expected = tokenizer.encode(text, add_special_tokens=False)

    class Wrapped:
        backend_tokenizer = _Counting(tokenizer.backend_tokenizer)

        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            ids: list[int] = tokenizer.encode(text, add_special_tokens=add_special_tokens)
            return ids

    wrapped = Wrapped()
    assert encode_sync(wrapped, text) == expected  # type: ignore[arg-type]
    assert wrapped.backend_tokenizer.batches and wrapped.backend_tokenizer.batches[0] > 1
    assert encode_sync(wrapped, text, add_special_tokens=True) == tokenizer.encode(text)  # type: ignore[arg-type]
    short = text[: 2 * PIECE_CHARS - 10]
    assert encode_sync(wrapped, short) == tokenizer.encode(short, add_special_tokens=False)  # type: ignore[arg-type]
    # the short one went to the backend whole (one text); the one with special tokens, to
    # the HF tokenizer
    assert wrapped.backend_tokenizer.batches[1:] == [1]
    assert encode_sync(_Slow(), text) == [len(text)]  # type: ignore[arg-type]


class _Recording:
    """A fast tokenizer whose backend records the pieces it is given, and on which thread."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.backend_tokenizer = self
        self.calls: list[tuple[int, str]] = []

    def __getattr__(self, name: str) -> Any:
        if name == "encode_batch_fast":  # recorded as encode_batch (app.encode_pieces)
            raise AttributeError(name)
        return getattr(self.tokenizer.backend_tokenizer, name)

    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
        import threading

        self.calls.append((len(texts), threading.current_thread().name))
        backend = self.tokenizer.backend_tokenizer
        return backend.encode_batch(texts, add_special_tokens=add_special_tokens)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=add_special_tokens)
        return ids


@pytest.mark.asyncio
async def test_encode_cuts_medium_texts_inline_and_long_ones_in_the_thread(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 16)
    rng = random.Random(11)
    text = tokenizer.decode([rng.randrange(_plain(tokenizer)) for _ in range(4000)])
    recording = _Recording(tokenizer)
    medium, long = text[: OFF_LOOP_CHARS - 1], text[: 6 * OFF_LOOP_CHARS]
    assert len(long) > MAX_PIECES * PIECE_CHARS
    for sample in (medium, long):
        got = await encode(recording, sample)  # type: ignore[arg-type]
        assert got == tokenizer.encode(sample, add_special_tokens=False)
    (medium_pieces, medium_thread), (long_pieces, long_thread) = recording.calls
    assert medium_pieces == (OFF_LOOP_CHARS - 1) // PIECE_CHARS and medium_thread == "MainThread"
    assert long_pieces == MAX_PIECES and long_thread.startswith("encode")


def test_no_more_pieces_than_cpus(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(12)
    text = tokenizer.decode([rng.randrange(_plain(tokenizer)) for _ in range(2000)])
    recording = _Recording(tokenizer)
    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 1)
    assert encode_sync(recording, text) == tokenizer.encode(text, add_special_tokens=False)  # type: ignore[arg-type]
    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 3)
    assert encode_sync(recording, text) == tokenizer.encode(text, add_special_tokens=False)  # type: ignore[arg-type]
    assert [pieces for pieces, _ in recording.calls] == [1, 3]  # one CPU: whole


class _Gated(_Recording):
    """A recording backend whose first `encode_batch` waits until `gate` is set."""

    def __init__(self, tokenizer: Any) -> None:
        import threading

        super().__init__(tokenizer)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
        if not self.calls:
            self.entered.set()
            assert self.gate.wait(10)
        return super().encode_batch(texts, add_special_tokens)


def _texts(tokenizer: Any, count: int, seed: int) -> list[str]:
    """Texts long enough to be cut (and so to go through the wave), too short for the thread
    when alone."""
    rng = random.Random(seed)
    texts = [
        tokenizer.decode([rng.randrange(_plain(tokenizer)) for _ in range(500)])[:1500]
        for _ in range(count)
    ]
    assert all(2 * PIECE_CHARS <= len(t) < OFF_LOOP_CHARS for t in texts)
    return texts


@pytest.mark.asyncio
async def test_a_wave_of_texts_is_encoded_together_in_the_thread(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 16)
    texts = _texts(tokenizer, 10, seed=13)
    recording = _Recording(tokenizer)
    got = await asyncio.gather(*(encode(recording, t) for t in texts))  # type: ignore[arg-type]
    assert got == [tokenizer.encode(t, add_special_tokens=False) for t in texts]
    # one call for all ten, in the encode thread; 16 CPUs for 10 texts: each one whole
    assert recording.calls == [(10, recording.calls[0][1])]
    assert recording.calls[0][1].startswith("encode")
    # the same text again: remembered (app.encode_turns), nothing encoded
    assert await encode(recording, texts[0]) == got[0]  # type: ignore[arg-type]
    assert len(recording.calls) == 1
    # one alone, new to this tokenizer, shorter than OFF_LOOP_CHARS: on the loop, in pieces
    fresh = _Recording(tokenizer)
    assert await encode(fresh, texts[0]) == got[0]  # type: ignore[arg-type]
    assert fresh.calls == [(len(texts[0]) // PIECE_CHARS, "MainThread")]


@pytest.mark.asyncio
async def test_texts_that_come_during_a_batch_wait_for_the_next_one(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 2)  # batches of two at most
    texts = _texts(tokenizer, 5, seed=14)
    gated = _Gated(tokenizer)
    first = [asyncio.ensure_future(encode(gated, t)) for t in texts[:2]]  # type: ignore[arg-type]
    await asyncio.get_running_loop().run_in_executor(None, gated.entered.wait, 10)
    later = [asyncio.ensure_future(encode(gated, t)) for t in texts[2:]]  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    later[0].cancel()  # its client went away: the others still get their ids
    gated.gate.set()
    got = await asyncio.gather(*first, *later[1:])
    assert got == [tokenizer.encode(t, add_special_tokens=False) for t in texts[:2] + texts[3:]]
    # two in the thread while the rest waited, then two more (one no longer wanted), then
    # the last alone, on the loop, in two pieces (two CPUs)
    threads = [thread.startswith("encode") for _, thread in gated.calls]
    assert [n for n, _ in gated.calls] == [2, 2, 2] and threads == [True, True, False]


@pytest.mark.asyncio
async def test_a_failed_batch_fails_each_of_its_texts(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    class Broken(_Recording):
        def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
            raise RuntimeError("tokenizer broke")

    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 4)
    texts = _texts(tokenizer, 3, seed=15)
    broken = Broken(tokenizer)
    got = await asyncio.gather(*(encode(broken, t) for t in texts), return_exceptions=True)  # type: ignore[arg-type]
    assert [str(g) for g in got] == ["tokenizer broke"] * 3
    recording = _Recording(tokenizer)  # and the next wave is served
    assert await encode(recording, texts[0]) == tokenizer.encode(texts[0], add_special_tokens=False)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_a_batch_cancelled_as_the_loop_closes_cancels_its_waiters() -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    wave = encode_module._Wave(loop)
    waiter: asyncio.Future[list[int]] = loop.create_future()
    done: asyncio.Future[list[list[int]]] = loop.create_future()
    done.cancel()
    wave.busy = True
    wave._done([(None, "text", waiter)], done)
    assert waiter.cancelled() and not wave.busy


@pytest.mark.asyncio
async def test_with_one_cpu_every_text_of_a_wave_is_encoded(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One text per batch, each short enough for the loop: the batches after the first
    are not left waiting for a later request."""
    import asyncio

    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 1)
    texts = _texts(tokenizer, 3, seed=16)
    recording = _Recording(tokenizer)
    wave = asyncio.gather(*(encode(recording, t) for t in texts))  # type: ignore[arg-type]
    got = await asyncio.wait_for(wave, timeout=10)
    assert got == [tokenizer.encode(t, add_special_tokens=False) for t in texts]
    assert [(n, thread) for n, thread in recording.calls] == [(1, "MainThread")] * 3


@pytest.mark.parametrize(
    "text",
    [
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
        "  leading spaces, trailing tabs\t\t",
        "über naïve 你好 🙂 \u200b zero-width",
        '<tool_call>{"name": "f"}</tool_call> and <|endoftext|> in the middle',
        "",
    ],
)
def test_a_short_text_straight_to_the_backend_has_the_tokenizers_ids(
    tokenizer: Any, text: str
) -> None:
    assert len(text) < 2 * PIECE_CHARS
    assert encode_sync(tokenizer, text) == tokenizer.encode(text, add_special_tokens=False)
