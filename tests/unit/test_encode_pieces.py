"""Long prompt texts cut into pieces: the same ids as the whole, where the tokenizer allows it."""

from __future__ import annotations

import copy
import json
import random
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.encode as encode_module
from app.encode import MAX_PIECES, OFF_LOOP_CHARS, PIECE_CHARS, encode, encode_sync
from app.encode_pieces import (
    QWEN2_SPLIT,
    backend_for,
    can_cut_at,
    config_of,
    cut,
    cuttable_config,
)
from app.tiny_tokenizer import build_tokenizer


@cache
def _gpt2_style() -> Any:
    """The tiny model's tokenizer: ByteLevel with GPT-2's regex built in."""
    return build_tokenizer("tiny")


@cache
def _qwen_style() -> Any:
    """The same vocabulary with Qwen3's pre-tokenizer and normalizer, as in its tokenizer.json."""
    from tokenizers import Regex, normalizers, pre_tokenizers

    tokenizer = build_tokenizer("tiny")
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    return tokenizer


def _config(tokenizer: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(tokenizer.to_str())
    return config


def _ids(tokenizer: Any, text: str) -> list[int]:
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False).ids
    return ids


# Characters that stress the rule: contractions, digits, runs of spaces and newlines,
# tabs, combining marks (NFC), Hangul jamo, CJK, added tokens' text, non-printables.
_ALPHABET = [
    *"abcXYZ 's'T'll 09 ,.!?-\n\r\t",
    *"\u00a0\u2003\u200b\u0301\u00e9\u1100\u1161\u3042",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "  ",
    " \n",
    "e\u0301",
    "'re",
    "\u00c5",
]
_TEXTS = st.lists(st.sampled_from(_ALPHABET), min_size=1, max_size=120).map("".join)


@pytest.mark.parametrize("make", [_gpt2_style, _qwen_style], ids=["gpt2-regex", "qwen3-split"])
@given(text=_TEXTS)
@settings(max_examples=300, deadline=None)
def test_every_allowed_cut_gives_the_ids_of_the_whole(make: Any, text: str) -> None:
    tokenizer = make()
    whole = _ids(tokenizer, text)
    for index in range(len(text)):
        if can_cut_at(text, index):
            assert _ids(tokenizer, text[:index]) + _ids(tokenizer, text[index:]) == whole, index


@pytest.mark.parametrize("make", [_gpt2_style, _qwen_style], ids=["gpt2-regex", "qwen3-split"])
def test_pieces_of_random_token_texts_give_the_ids_of_the_whole(make: Any) -> None:
    """Texts as the benchmark sends them: random ids decoded, re-encoded by the server."""
    tokenizer = make()
    rng = random.Random(5)
    size = tokenizer.get_vocab_size()
    for _ in range(40):
        text = tokenizer.decode([rng.randrange(size) for _ in range(rng.randrange(50, 1200))])
        whole = _ids(tokenizer, text)
        for count in (2, 3, 4, 8):
            pieces = cut(text, count)
            assert "".join(pieces) == text
            assert [i for piece in pieces for i in _ids(tokenizer, piece)] == whole


def test_cuts_the_rule_forbids_change_the_ids() -> None:
    """The rule is not vacuous: cutting inside a word or after the space changes the ids."""
    tokenizer = _qwen_style()
    text = "assistant answers questions"
    whole = _ids(tokenizer, text)
    assert can_cut_at(text, 9) and not can_cut_at(text, 10) and not can_cut_at(text, 4)
    assert _ids(tokenizer, text[:9]) + _ids(tokenizer, text[9:]) == whole
    assert _ids(tokenizer, text[:10]) + _ids(tokenizer, text[10:]) != whole
    assert _ids(tokenizer, text[:4]) + _ids(tokenizer, text[4:]) != whole


@pytest.mark.parametrize(
    ("text", "index", "allowed"),
    [
        ("ab cd", 2, True),
        ("ab  cd", 3, False),  # the space before it is part of the run
        ("ab  cd", 2, False),  # a run of two spaces
        ("ab 12", 2, False),  # a digit after it
        ("ab\t cd", 3, False),  # whitespace before it
        ("ab\u200b cd", 3, False),  # a non-printable before it
        ("ab. cd", 3, True),
        ("ab \u0301d", 2, False),  # a combining mark after it
        (" cd", 0, False),
        ("ab ", 2, False),
    ],
)
def test_can_cut_at(text: str, index: int, allowed: bool) -> None:
    assert can_cut_at(text, index) is allowed


def test_cut_shares_and_texts_without_a_place_to_cut() -> None:
    text = " ".join(["word"] * 100)
    pieces = cut(text, 4)
    assert len(pieces) == 4 and "".join(pieces) == text
    assert all(abs(len(piece) - len(text) / 4) < 10 for piece in pieces)
    assert cut("x" * 5000, 4) == ["x" * 5000]
    assert cut(text, 1) == [text]
    assert cut("a" * 3000 + " b", 3) == ["a" * 3000, " b"]


def test_the_configs_that_may_be_cut() -> None:
    assert cuttable_config(_config(_gpt2_style()))
    assert cuttable_config(_config(_qwen_style()))


def _changed(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    config = copy.deepcopy(base)
    target: Any = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return config


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("pre_tokenizer", "pretokenizers", 0, "pattern", "Regex"), r"\s+|\S+"),
        (("pre_tokenizer", "pretokenizers", 0, "behavior"), "MergedWithNext"),
        (("pre_tokenizer", "pretokenizers", 0, "invert"), True),
        (("pre_tokenizer", "pretokenizers", 1, "add_prefix_space"), True),
        (("pre_tokenizer", "pretokenizers", 1, "use_regex"), True),
        (("normalizer",), {"type": "Lowercase"}),
        (("model", "dropout"), 0.1),
        (("model", "type"), "WordPiece"),
        (("truncation",), {"max_length": 10}),
        (("padding",), {"strategy": "BatchLongest"}),
        (("added_tokens", 0, "lstrip"), True),
        (("added_tokens", 0, "rstrip"), True),
        (("added_tokens", 0, "content"), "<|im start|>"),
        (("pre_tokenizer",), None),
    ],
)
def test_any_other_config_is_not_cut(path: tuple[Any, ...], value: Any) -> None:
    assert not cuttable_config(_changed(_config(_qwen_style()), path, value))


def test_the_components_give_the_answer_of_the_whole_document() -> None:
    """`config_of` reads the live tokenizer's parts; `tokenizer.json` as a whole agrees."""
    from tokenizers import AddedToken, normalizers, pre_tokenizers

    variants = [_gpt2_style(), _qwen_style()]
    prefixed = build_tokenizer("tiny")
    prefixed.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    lowered = _qwen_style().__class__.from_str(_qwen_style().to_str())
    lowered.normalizer = normalizers.Lowercase()
    stripping = build_tokenizer("tiny")
    stripping.add_tokens([AddedToken("<mask>", lstrip=True)])
    truncating = build_tokenizer("tiny")
    truncating.enable_truncation(16)
    variants += [prefixed, lowered, stripping, truncating]
    answers = [cuttable_config(config_of(tokenizer)) for tokenizer in variants]
    assert answers == [cuttable_config(_config(tokenizer)) for tokenizer in variants]
    assert answers == [True, True, False, False, False, False]


def test_gpt2_byte_level_needs_its_regex_and_no_prefix_space() -> None:
    base = _config(_gpt2_style())
    assert not cuttable_config(_changed(base, ("pre_tokenizer", "add_prefix_space"), True))
    assert not cuttable_config(_changed(base, ("pre_tokenizer", "use_regex"), False))


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
    monkeypatch.setattr(encode_module, "_cpus", lambda: 4)
    rng = random.Random(9)
    text = tokenizer.decode([rng.randrange(len(tokenizer)) for _ in range(2000)])
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
    assert len(wrapped.backend_tokenizer.batches) == 1  # neither of those two was cut
    assert encode_sync(_Slow(), text) == [len(text)]  # type: ignore[arg-type]


class _Recording:
    """A fast tokenizer whose backend records the pieces it is given, and on which thread."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.backend_tokenizer = self
        self.calls: list[tuple[int, str]] = []

    def __getattr__(self, name: str) -> Any:
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
    monkeypatch.setattr(encode_module, "_cpus", lambda: 16)
    rng = random.Random(11)
    text = tokenizer.decode([rng.randrange(len(tokenizer)) for _ in range(4000)])
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
    text = tokenizer.decode([rng.randrange(len(tokenizer)) for _ in range(2000)])
    recording = _Recording(tokenizer)
    monkeypatch.setattr(encode_module, "_cpus", lambda: 1)
    assert encode_sync(recording, text) == tokenizer.encode(text, add_special_tokens=False)  # type: ignore[arg-type]
    monkeypatch.setattr(encode_module, "_cpus", lambda: 3)
    assert encode_sync(recording, text) == tokenizer.encode(text, add_special_tokens=False)  # type: ignore[arg-type]
    assert [pieces for pieces, _ in recording.calls] == [3]
