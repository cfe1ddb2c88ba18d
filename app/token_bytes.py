"""The raw bytes of tokens, and the text each adds to its sequence (for logprobs).

A byte-level BPE token (Qwen's, GPT-2's) may end inside a UTF-8 character: "乎" is
`ä¹` + `İ` in the tiny model, bytes e4 b9 + 8e. Decoding such a token alone gives
U+FFFD, and vLLM's `decoded_token` gives "" for it, so a `bytes` list built from either
loses the bytes. Here a token's bytes are read from its vocabulary piece
(`convert_ids_to_tokens`) through the inverse of GPT-2's bytes_to_unicode table; other
tokenizers fall back to SentencePiece's `<0xNN>` byte pieces and `▁` spaces, then to the
decoded text.

The text a token adds is that of an incremental UTF-8 decoder fed the sequence's bytes:
a token that ends inside a character adds "", the one that completes it adds the whole
character (vLLM's convention), and bytes that can't be UTF-8 add U+FFFD, as the
detokenized text shows them. So the texts join up to the sequence's text and the bytes
join up to its bytes. Special and added tokens (`<|im_end|>`, `<think>`) are their text.
"""

from __future__ import annotations

import codecs
import functools
import re
from typing import Any

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # SentencePiece's byte fallback
_SPACE_MARK = "\u2581"  # SentencePiece's "▁" for a space


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map, the alphabet of the ByteLevel pre-tokenizer."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


@functools.cache
def unicode_to_byte() -> dict[str, int]:
    """The inverse of `bytes_to_unicode`: a ByteLevel character -> its byte."""
    return {char: byte for byte, char in bytes_to_unicode().items()}


def is_byte_level(tokenizer: Any) -> bool:
    """Whether the vocabulary is spelled in GPT-2's byte alphabet (" \\n" is "ĠĊ")."""
    try:
        ids = tokenizer.encode(" \n", add_special_tokens=False)
        pieces = tokenizer.convert_ids_to_tokens(ids)
    except Exception:
        return False
    return isinstance(pieces, list) and "".join(map(str, pieces)) == "ĠĊ"


class TokenBytes:
    """Token id -> its raw bytes, or its text for special and added tokens (cached)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._byte_level = is_byte_level(tokenizer)
        added = getattr(tokenizer, "get_added_vocab", None)
        self._added: frozenset[int] = (
            frozenset(added().values()) if callable(added) else frozenset()
        )
        self._cache: dict[int, bytes | str] = {}

    def __call__(self, token_id: int) -> bytes | str:
        """The token's bytes; a str for a special or added token (whole text)."""
        found = self._cache.get(token_id)
        if found is None:
            found = self._cache[token_id] = self._read(token_id)
        return found

    def _read(self, token_id: int) -> bytes | str:
        if token_id in self._added:
            return self._decode(token_id)
        try:
            piece = self._tokenizer.convert_ids_to_tokens(token_id)
        except Exception:
            piece = None
        if not isinstance(piece, str):
            return self._decode(token_id).encode("utf-8", "replace")
        if self._byte_level:
            table = unicode_to_byte()
            if all(char in table for char in piece):
                return bytes(table[char] for char in piece)
        byte = _BYTE_PIECE.fullmatch(piece)
        if byte is not None:
            return bytes([int(byte.group(1), 16)])
        if _SPACE_MARK in piece:
            return piece.replace(_SPACE_MARK, " ").encode("utf-8", "replace")
        return self._decode(token_id).encode("utf-8", "replace")

    def _decode(self, token_id: int) -> str:
        text = self._tokenizer.decode([token_id])
        return text if isinstance(text, str) else ""


def _utf8_decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")("replace")


class TokenTexts:
    """The text and bytes each token of one sequence adds, in order (see the module)."""

    def __init__(self, token_bytes: TokenBytes) -> None:
        self._bytes = token_bytes
        self._pending = b""  # the start of a character not yet complete

    def next(self, token_id: int) -> tuple[str, bytes]:
        """The token at the sequence's end: its text and bytes; the sequence moves on."""
        text, raw, self._pending = self._add(token_id)
        return text, raw

    def peek(self, token_id: int) -> tuple[str, bytes]:
        """What the token would add in the next place (a top-logprobs alternative)."""
        text, raw, _ = self._add(token_id)
        return text, raw

    def _add(self, token_id: int) -> tuple[str, bytes, bytes]:
        raw = self._bytes(token_id)
        if isinstance(raw, str):  # a special token: its text; a cut character ends
            flushed = _utf8_decoder().decode(self._pending, final=True)
            return flushed + raw, raw.encode("utf-8"), b""
        decoder = _utf8_decoder()
        text = decoder.decode(self._pending + raw)
        return text, raw, decoder.getstate()[0]
