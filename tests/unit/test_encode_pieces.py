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

from app.encode_pieces import (
    QWEN2_SPLIT,
    can_cut_at,
    config_of,
    cut,
    cuttable_config,
    encode_batch,
    encode_each,
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


class _BatchOnly:
    """A backend of a `tokenizers` release without `encode_batch_fast`."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.calls = 0

    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
        self.calls += 1
        return self.backend.encode_batch(texts, add_special_tokens=add_special_tokens)


@pytest.mark.parametrize("make", [_gpt2_style, _qwen_style], ids=["gpt2-regex", "qwen3-split"])
def test_encode_batch_takes_the_fast_call_and_gives_the_same_ids(make: Any) -> None:
    tokenizer = make()
    rng = random.Random(6)
    size = tokenizer.get_vocab_size()
    text = tokenizer.decode([rng.randrange(size) for _ in range(1024)])
    pieces = cut(text, 4)
    assert len(pieces) == 4
    whole = _ids(tokenizer, text)
    fast_calls: list[int] = []
    fast = tokenizer.encode_batch_fast

    class Watched:
        def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
            raise AssertionError("encode_batch_fast is there: take it")

        def encode_batch_fast(self, texts: list[str], add_special_tokens: bool) -> Any:
            fast_calls.append(len(texts))
            return fast(texts, add_special_tokens=add_special_tokens)

    assert encode_each(Watched(), pieces) == whole and fast_calls == [4]
    assert [e.ids for e in encode_batch(Watched(), pieces)] == [_ids(tokenizer, p) for p in pieces]
    older = _BatchOnly(tokenizer)
    assert encode_each(older, pieces) == whole and older.calls == 1


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
