"""app.encode_turns: a text split at its added tokens encodes to the ids of the whole, and
the parts a conversation repeats are remembered, not encoded again."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.encode as encode_module
from app.encode import OFF_LOOP_CHARS, PIECE_CHARS, encode
from app.encode_turns import TurnCache, boundary_tokens, joined, lookup, sources, split
from app.tiny_tokenizer import build_tokenizer


@cache
def _with_overlapping_tokens() -> Any:
    """The tiny tokenizer plus added tokens that overlap: one the start of another, one
    normalized (matched inside the parts)."""
    from tokenizers import AddedToken

    tokenizer = build_tokenizer("tiny")
    tokenizer.add_tokens(
        [
            AddedToken("<a>", normalized=False),
            AddedToken("<a>b", normalized=False),
            AddedToken("b<a", normalized=False),
            AddedToken("xyz", normalized=True),
        ]
    )
    return tokenizer


def _encoded_in_parts(tokenizer: Any, text: str) -> list[int]:
    tokens = boundary_tokens(tokenizer)
    assert tokens is not None
    parts = split(text, tokens)
    fresh = {
        p: tokenizer.encode(p, add_special_tokens=False).ids for p in parts if isinstance(p, str)
    }
    return joined(parts, fresh)


_ALPHABET = [
    *"ab xyz<>|\n\t'",
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "<|im_",
    "im_end|>",
    "<a>",
    "<a>b",
    "b<a",
    "xyz",
    "user\n",
    "assistant\n",
    "e\u0301",
    "\u3042",
]
_TEXTS = st.lists(st.sampled_from(_ALPHABET), min_size=0, max_size=80).map("".join)


@given(text=_TEXTS)
@settings(max_examples=400, deadline=None)
def test_a_text_in_parts_gives_the_ids_of_the_whole(text: str) -> None:
    tokenizer = _with_overlapping_tokens()
    assert (
        _encoded_in_parts(tokenizer, text) == tokenizer.encode(text, add_special_tokens=False).ids
    )


def test_conversations_as_the_template_renders_them(tokenizer: Any) -> None:
    rng = random.Random(3)
    backend = tokenizer.backend_tokenizer
    for _ in range(20):
        messages = [
            {"role": rng.choice(["system", "user", "assistant"]), "content": tokenizer.decode(
                [rng.randrange(len(tokenizer)) for _ in range(rng.randrange(0, 300))]
            )}
            for _ in range(rng.randrange(1, 6))
        ]  # fmt: skip
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert _encoded_in_parts(backend, text) == tokenizer.encode(text, add_special_tokens=False)


def test_split_takes_the_leftmost_then_the_longest_match() -> None:
    tokens = {"<a>": 1, "<a>b": 2, "b<a": 3, "<|im_end|>": 4}
    assert split("<a>b<a>", tokens) == [2, 1]  # "<a>b" first, then "<a>"
    assert split("<a>b<a", tokens) == [2, "<a"]  # "b<a" overlaps "<a>b": not matched
    assert split("xb<a>b", tokens) == ["x", 3, ">b"]  # "b<a" starts before "<a>b"
    assert split("<|im_end|><|im_end|>\n", tokens) == [4, 4, "\n"]
    assert split("no tokens", tokens) == ["no tokens"]
    assert split("", tokens) == []


def test_tokenizers_whose_tokens_strip_or_match_words_are_not_split() -> None:
    from tokenizers import AddedToken

    assert boundary_tokens(build_tokenizer("tiny")) is not None
    assert "xyz" not in (boundary_tokens(_with_overlapping_tokens()) or {})  # normalized
    for flag in ("lstrip", "rstrip", "single_word"):
        tokenizer = build_tokenizer("tiny")
        tokenizer.add_tokens([AddedToken("<s>", normalized=False, **{flag: True})])
        assert boundary_tokens(tokenizer) is None, flag
    literal = build_tokenizer("tiny")
    literal.encode_special_tokens = True
    assert boundary_tokens(literal) is None


def test_the_cache_forgets_the_least_recently_used_past_its_size() -> None:
    turns = TurnCache(max_chars=10)
    turns.put("aaaa", [1])
    turns.put("bbbb", [2])
    assert turns.get("aaaa") is not None  # now the most recent
    turns.put("cccc", [3])
    assert turns.get("bbbb") is None and list(turns.get("aaaa") or []) == [1]
    assert turns.chars == 8
    turns.put("x" * 11, [4])  # larger than the whole cache: not kept
    assert turns.get("x" * 11) is None
    known, missing = lookup(["aaaa", 5, "dd", "dd", "cccc", "aaaa"], turns)
    assert missing == ["dd"] and {k: list(v) for k, v in known.items()} == {
        "aaaa": [1],
        "cccc": [3],
    }


class _Recording:
    """The HF tokenizer with its backend's `encode_batch` recorded (texts per call)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.backend_tokenizer = self
        self.texts: list[list[str]] = []
        self.threads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name == "encode_batch_fast":  # recorded as encode_batch
            raise AttributeError(name)
        return getattr(self.tokenizer.backend_tokenizer, name)

    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> Any:
        import threading

        self.texts.append(list(texts))
        self.threads.append(threading.current_thread().name)
        return self.tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False)


def test_sources_count_each_occurrence_by_how_its_ids_were_had() -> None:
    """A part encoded for this prompt counts as encoded wherever it occurs; the added
    tokens' ids count in neither."""
    parts: list[str | int] = ["old", 7, "new", 7, "new", "old"]
    ids_of = {"old": [1, 2, 3], "new": [4, 5]}
    assert sources(parts, ids_of, ["new"]) == (6, 4)
    assert sources(parts, ids_of, []) == (10, 0)


@pytest.mark.asyncio
async def test_a_conversations_next_turn_encodes_only_its_new_messages(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 1)  # whole parts, one per text
    rng = random.Random(8)

    plain = min(tokenizer.added_tokens_decoder)  # the added tokens come last

    def words(count: int) -> str:
        return str(tokenizer.decode([rng.randrange(plain) for _ in range(count)]))

    recording = _Recording(tokenizer)
    tallies: list[tuple[int, int]] = []
    messages = [{"role": "user", "content": words(1000)}]
    for turn in range(3):
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        recording.texts.clear()
        tallies.clear()
        got = await encode(recording, text, tally=lambda r, e: tallies.append((r, e)))
        assert got == tokenizer.encode(text, add_special_tokens=False)
        (remembered, fresh), specials = tallies[0], sum(t >= plain for t in got)
        assert len(tallies) == 1 and remembered + fresh == len(got) - specials
        assert remembered == 0 if turn == 0 else remembered > 2 * fresh > 0
        encoded = [t for call in recording.texts for t in call]
        if turn == 0:
            assert any(messages[0]["content"] in t for t in encoded)
        else:  # the reply and the new question; none of the earlier messages
            assert all(m["content"] not in t for m in messages[:-2] for t in encoded)
            assert any(messages[-1]["content"] in t for t in encoded)
            assert sum(len(t) for t in encoded) < len(text) / 3
        messages += [
            {"role": "assistant", "content": words(100)},
            {"role": "user", "content": words(100)},
        ]


@pytest.mark.asyncio
async def test_several_new_parts_are_encoded_in_one_batch(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short together: on the loop; long together (OFF_LOOP_CHARS or more): in the encode
    thread; one call each."""
    monkeypatch.setattr(encode_module, "usable_cpus", lambda: 2)
    rng = random.Random(9)
    plain = min(tokenizer.added_tokens_decoder)

    def words(count: int) -> str:
        return str(tokenizer.decode([rng.randrange(plain) for _ in range(count)]))

    for chars, thread in ((450, "MainThread"), (1500, "encode")):
        messages = [{"role": r, "content": words(2000)[:chars]} for r in ("system", "user")]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert len(text) >= 2 * PIECE_CHARS
        assert (2 * chars >= OFF_LOOP_CHARS) == (thread == "encode")
        recording = _Recording(tokenizer)
        assert await encode(recording, text) == tokenizer.encode(text, add_special_tokens=False)
        assert len(recording.texts) == 1 and len(recording.texts[0]) >= 2, chars
        assert recording.threads[0].startswith(thread), chars
