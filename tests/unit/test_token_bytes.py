"""app.token_bytes: tokens' raw bytes and the text each adds, on the tiny model's
byte-level BPE tokenizer (whose vocabulary, like Qwen's, splits characters), and the
logprobs built from them (chat's `content`, the legacy `tokens` / `text_offset`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from app.chat.wire import logprobs_content
from app.completions.wire import LegacyLogprobs
from app.token_bytes import TokenBytes, TokenTexts, bytes_to_unicode, is_byte_level

SPLIT = ["于是乎", "café ☕ 你好", "naïve 🙂 done", "Привет\n"]


@dataclass
class Lp:
    """vLLM's Logprob, with the `decoded_token` it gives a cut character: ""."""

    logprob: float
    rank: int
    decoded_token: str = ""


def test_bytes_to_unicode_is_gpt2s() -> None:
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert (table[ord(" ")], table[ord("\n")], table[ord("a")]) == ("Ġ", "Ċ", "a")


def test_the_tiny_tokenizer_splits_characters(tokenizer: Any) -> None:
    """The premise of the tests below: some tokens end inside a character."""
    assert is_byte_level(tokenizer)
    ids = tokenizer.encode("于是乎", add_special_tokens=False)
    assert "\ufffd" in "".join(tokenizer.decode([i]) for i in ids)


@pytest.mark.parametrize("text", SPLIT)
def test_texts_and_bytes_join_up(tokenizer: Any, text: str) -> None:
    texts = TokenTexts(TokenBytes(tokenizer))
    pieces = [texts.next(i) for i in tokenizer.encode(text, add_special_tokens=False)]
    assert "".join(token for token, _ in pieces) == text
    assert b"".join(raw for _, raw in pieces) == text.encode()
    assert all(raw for _, raw in pieces)  # no token loses its bytes


def test_a_cut_character_is_empty_then_whole(tokenizer: Any) -> None:
    """vLLM's convention: "" for the token that starts "乎", "乎" for the one ending it."""
    token_bytes = TokenBytes(tokenizer)
    ids = tokenizer.encode("乎", add_special_tokens=False)
    assert len(ids) == 2
    texts = TokenTexts(token_bytes)
    assert texts.next(ids[0]) == ("", "乎".encode()[:2])
    assert texts.next(ids[1]) == ("乎", "乎".encode()[2:])


def test_peek_does_not_move_on(tokenizer: Any) -> None:
    start, end = tokenizer.encode("乎", add_special_tokens=False)
    texts = TokenTexts(TokenBytes(tokenizer))
    texts.next(start)
    assert texts.peek(end) == texts.peek(end) == ("乎", "乎".encode()[2:])
    assert texts.next(end)[0] == "乎"


def test_bytes_that_cannot_be_utf8_are_a_replacement_character(tokenizer: Any) -> None:
    """A lone continuation byte shows as U+FFFD (as the detokenized text has it)."""
    lone = tokenizer.convert_tokens_to_ids(bytes_to_unicode()[0x8E])
    texts = TokenTexts(TokenBytes(tokenizer))
    after = tokenizer.encode("el", add_special_tokens=False)
    assert texts.next(lone) == ("\ufffd", b"\x8e")
    assert "".join(texts.next(i)[0] for i in after) == "el"


def test_special_tokens_are_their_text(tokenizer: Any) -> None:
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert TokenTexts(TokenBytes(tokenizer)).next(im_end) == ("<|im_end|>", b"<|im_end|>")


def test_chat_logprobs_keep_every_tokens_bytes(tokenizer: Any) -> None:
    """Was `{"token": "", "bytes": []}` for the start of "乎" (bytes from vLLM's text)."""
    ids = tokenizer.encode("是乎", add_special_tokens=False)
    paren = tokenizer.convert_tokens_to_ids("(")
    positions = [{i: Lp(-0.5, 1), paren: Lp(-1.0, 2, "(")} for i in ids]
    items = logprobs_content(ids, positions, 2, TokenTexts(TokenBytes(tokenizer)))
    assert "".join(item["token"] for item in items) == "是乎"
    assert bytes(b for item in items for b in item["bytes"]) == "是乎".encode()
    assert all(item["bytes"] for item in items)
    assert [top["token"] for top in items[0]["top_logprobs"]] == ["是", "("]
    assert items[0]["top_logprobs"][0]["bytes"] == list("是".encode())


def test_legacy_tokens_join_up_to_the_text(tokenizer: Any) -> None:
    """Was `["于", "\\u0000W", "", "el"]` for "于\\u0000W\\ufffdel": offsets went wrong."""
    text = "于\x00W"
    ids = tokenizer.encode(text, add_special_tokens=False)
    ids += [tokenizer.convert_tokens_to_ids(bytes_to_unicode()[0x8E])]
    ids += tokenizer.encode("el 乎!", add_special_tokens=False)
    text += "\ufffdel 乎!"
    logprobs = LegacyLogprobs()
    texts = TokenTexts(TokenBytes(tokenizer))
    half = len(ids) // 2  # in two steps, as a stream gets them
    for part in (ids[:half], ids[half:]):
        logprobs.add(part, [{i: Lp(-0.1, 1)} for i in part], 1, texts)
    assert "".join(logprobs.tokens) == text
    for token, offset in zip(logprobs.tokens, logprobs.text_offset, strict=True):
        assert text[offset : offset + len(token)] == token
