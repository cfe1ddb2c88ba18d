"""app.fast_encode: fastokens kept only where it gives the tokenizer's ids on the check
texts; app.encode sends prompts to it (inline, long ones in the encode thread), and a
conversation's earlier turns are still remembered."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import app.encode as encode_module
from app import fast_encode
from app.encode import FAST_OFF_LOOP_CHARS, encode, forget_turns


@pytest.fixture
def attached(tokenizer: Any) -> Iterator[Any]:
    """The session's tokenizer with fastokens attached, detached again afterwards."""
    assert fast_encode.attach(tokenizer) is None
    try:
        yield tokenizer
    finally:
        fast_encode.detach(tokenizer)
        forget_turns(tokenizer)


@pytest.fixture
def recorder(attached: Any, monkeypatch: pytest.MonkeyPatch) -> _Recorder:
    """The attached fastokens, behind a `_Recorder` that `app.encode` is given instead."""
    recording = _Recorder(fast_encode.fast_encoder(attached))
    monkeypatch.setattr(fast_encode, "fast_encoder", lambda _: recording)
    return recording


class _Recorder:
    """A fastokens tokenizer that notes the texts it encodes and on which thread."""

    def __init__(self, fast: Any) -> None:
        self.fast = fast
        self.calls: list[tuple[list[str], str]] = []

    def encode(self, text: str, add_special_tokens: bool) -> Any:
        self.calls.append(([text], threading.current_thread().name))
        return self.fast.encode(text, add_special_tokens=add_special_tokens)


class _OffByOne:
    """A fastokens stand-in whose ids are all one too high."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str, add_special_tokens: bool) -> Any:
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return type("Encoding", (), {"ids": [i + 1 for i in ids]})


def _words(tokenizer: Any, count: int, seed: int) -> str:
    rng = random.Random(seed)
    plain = min(tokenizer.added_tokens_decoder)
    return str(tokenizer.decode([rng.randrange(plain) for _ in range(count)]))


def test_attached_fastokens_gives_the_tokenizers_ids(attached: Any) -> None:
    fast = fast_encode.fast_encoder(attached)
    assert fast is not None
    texts = [_words(attached, n, seed) for seed, n in enumerate((1, 50, 700))]
    texts.append(
        attached.apply_chat_template(
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": texts[1]}],
            tokenize=False,
            add_generation_prompt=True,
        )
    )
    got = fast_encode.encode_texts(fast, texts)
    assert got == [attached.encode(t, add_special_tokens=False) for t in texts]
    assert fast_encode.attach(attached) is None  # once is enough
    assert fast_encode.fast_encoder(attached) is fast


def test_fastokens_that_disagrees_is_not_attached(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fastokens

    monkeypatch.setattr(
        fastokens.Tokenizer, "from_json_str", staticmethod(lambda _: _OffByOne(tokenizer))
    )
    why = fast_encode.attach(tokenizer)
    assert why is not None and why.startswith("fastokens gives other ids than the tokenizer for")
    assert fast_encode.fast_encoder(tokenizer) is None
    assert fast_encode.choose(tokenizer, True, "cuda") == f"tokenizers: {why}"


def test_without_fastokens_the_tokenizer_encodes(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "fastokens", None)
    assert fast_encode.attach(tokenizer) == "fastokens is not installed"
    assert fast_encode.fast_encoder(tokenizer) is None
    assert fast_encode.attach(object()) == "fastokens is not installed"


def test_choose_attaches_or_detaches(tokenizer: Any) -> None:
    """Asked for, or auto with a GPU: attached; turned off, or auto on a CPU: detached."""
    try:
        assert fast_encode.choose(tokenizer, True, "cpu") == "fastokens"
        assert fast_encode.fast_encoder(tokenizer) is not None
        assert fast_encode.choose(tokenizer, False, "cuda") == "tokenizers (--no-fast-tokenizer)"
        assert fast_encode.fast_encoder(tokenizer) is None
        assert fast_encode.choose(tokenizer, None, "cuda") == "fastokens"
        assert fast_encode.fast_encoder(tokenizer) is not None
        assert fast_encode.choose(tokenizer, None, "cpu").startswith("tokenizers (auto: ")
        assert fast_encode.fast_encoder(tokenizer) is None
    finally:
        fast_encode.detach(tokenizer)


def test_a_tokenizer_without_a_backend_keeps_its_own_encode() -> None:
    class Slow:
        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return [len(text)]

    assert fast_encode.attach(Slow()) == "the tokenizer has no tokenizers backend"
    assert fast_encode.fast_encoder(Slow()) is None


def test_check_texts_hold_every_added_token_and_random_ones(tokenizer: Any) -> None:
    texts = fast_encode.check_texts(tokenizer)
    for token in tokenizer.added_tokens_decoder.values():
        assert sum(token.content in t for t in texts) >= 4
    assert set(fast_encode.FIXED_TEXTS) <= set(texts)
    assert len(texts) > len(fast_encode.FIXED_TEXTS) + 5 * len(tokenizer.added_tokens_decoder)


def test_first_mismatch_names_the_text(tokenizer: Any) -> None:
    texts = ["hello", "world"]
    assert fast_encode.first_mismatch(tokenizer, _OffByOne(tokenizer), texts) == "hello"


@pytest.mark.asyncio
async def test_encode_sends_short_and_long_texts_to_fastokens(
    attached: Any, recorder: _Recorder
) -> None:
    short = _words(attached, 20, 1)
    plain_long = _words(attached, 5000, 2)  # no added tokens: one part
    assert len(short) < 2 * encode_module.PIECE_CHARS
    for text in (short, plain_long, plain_long * 12):
        recorder.calls.clear()
        assert await encode(attached, text) == attached.encode(text, add_special_tokens=False)
        [(texts, thread)] = recorder.calls
        assert texts == [text]
        off_loop = thread.startswith("encode")  # the encode thread, "encode_0"
        assert off_loop == (len(text) >= FAST_OFF_LOOP_CHARS), thread
        assert thread == "MainThread" or off_loop
    recorder.calls.clear()
    assert await encode(attached, short, add_special_tokens=True) == attached.encode(
        short, add_special_tokens=True
    )
    assert recorder.calls == []  # the tokenizer's own special tokens: not through fastokens


@pytest.mark.asyncio
async def test_a_conversations_earlier_turns_are_remembered_with_fastokens(
    attached: Any, recorder: _Recorder
) -> None:
    messages = [{"role": "user", "content": _words(attached, 600, 3)}]
    tallies: list[tuple[int, int]] = []
    for turn in range(2):
        text = attached.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        recorder.calls.clear()
        tallies.clear()
        got = await encode(attached, text, tally=lambda r, e: tallies.append((r, e)))
        assert got == attached.encode(text, add_special_tokens=False)
        encoded = [t for texts, _ in recorder.calls for t in texts]
        [(remembered, fresh)] = tallies
        if turn == 0:
            assert remembered == 0 and any(messages[0]["content"] in t for t in encoded)
        else:  # only the reply and the new question
            assert remembered > fresh > 0
            assert all(messages[0]["content"] not in t for t in encoded)
        messages += [
            {"role": "assistant", "content": _words(attached, 80, 4 + turn)},
            {"role": "user", "content": _words(attached, 80, 6 + turn)},
        ]


@pytest.mark.parametrize(
    ("wanted", "device", "expected"),
    [(True, "cpu", True), (None, "cpu", False), (None, "cuda", True), (False, "cuda", False)],
)
def test_is_wanted(wanted: bool | None, device: str, expected: bool) -> None:
    assert fast_encode.is_wanted(wanted, device) is expected


def test_a_copy_takes_up_the_preloaded_fastokens(tiny_dir: Any) -> None:
    """The fork server preloads fastokens for its tokenizer; a worker's copy of that
    tokenizer (same backend) checks and attaches that one instead of loading its own."""
    import copy

    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(tiny_dir)
    assert fast_encode.preload(loaded)
    fast = fast_encode.preloaded(loaded)
    assert fast is not None
    worker_copy = copy.copy(loaded)
    assert fast_encode.preloaded(worker_copy) is fast
    assert fast_encode.preloaded(AutoTokenizer.from_pretrained(tiny_dir)) is None  # other backend
    try:
        assert fast_encode.choose(worker_copy, True) == "fastokens (loaded by the fork server)"
        assert fast_encode.fast_encoder(worker_copy) is fast
        text = "hello world, hello tokenizer"
        assert list(fast.encode(text, add_special_tokens=False).ids) == worker_copy.encode(
            text, add_special_tokens=False
        )
    finally:
        fast_encode.detach(worker_copy)
    assert fast_encode.preload(object()) is False  # no backend: nothing to load


PRELOAD_THREADS = """
import os, sys
from transformers import AutoTokenizer
from app import fast_encode
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
before = len(os.listdir("/proc/self/task"))
assert fast_encode.preload(tokenizer)
after_preload = len(os.listdir("/proc/self/task"))
fast_encode.preloaded(tokenizer).encode("hello", add_special_tokens=False)
print(before, after_preload, len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="counts threads in /proc")
def test_preloading_starts_no_thread(tiny_dir: Any) -> None:
    """The fork server must have no thread but its own when it forks: fastokens starts
    its threads at the first encode, so `preload` encodes nothing."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", PRELOAD_THREADS, str(tiny_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    before, after_preload, after_encode = map(int, done.stdout.split())
    assert after_preload == before
    assert after_encode > before  # what an encode there would have done
