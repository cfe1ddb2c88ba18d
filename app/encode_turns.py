"""A prompt text split at its added tokens, each part's ids remembered, so that the turns
of a conversation already tokenized are not tokenized again.

A chat client sends the whole conversation every turn, and the rendered prompt repeats the
last turn's text with the new messages after it. `tokenizers` splits a text at the added
tokens it matches on the raw text (those with `normalized: false`: Qwen3's
`<|im_start|>`, `<|im_end|>`, `<think>`, ...) before anything else, leftmost and longest
first (`aho-corasick`'s `LeftmostLongest`), and normalizes, pre-tokenizes and encodes each
part between them on its own. So `split` finds the same matches and the ids of a text are
its parts' ids with the tokens' ids between them, each part's ids being those of the part
encoded alone. Parts already seen come from `TurnCache`; only the new ones are encoded.
Tokenizers whose added tokens strip whitespace or match whole words only, or that encode
special tokens as text, are left alone (`boundary_tokens` returns None).
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Final

MAX_CHARS: Final = 1_000_000
"""The parts' characters a `TurnCache` holds at most, least recently used out first: about
5 MB a process (the text, and the ids as 4-byte integers); some 150 conversations of 4,000
tokens."""

Part = str | int
"""A text to encode, or the id of an added token matched in the prompt."""


def boundary_tokens(backend: Any) -> dict[str, int] | None:
    """The added tokens `tokenizers` matches on the raw text, by content, when the text may
    be split at them as `split` does; None when it may not."""
    if getattr(backend, "encode_special_tokens", False):
        return None
    tokens: dict[str, int] = {}
    for token_id, token in backend.get_added_tokens_decoder().items():
        if token.normalized:
            continue  # matched inside each part, after normalizing
        if token.lstrip or token.rstrip or token.single_word or not token.content:
            return None
        tokens[token.content] = token_id
    return tokens


def split(text: str, tokens: dict[str, int]) -> list[Part]:
    """`text` as its parts and the ids of the added tokens between them, the tokens matched
    leftmost first and, among those starting at one place, longest first; no empty parts."""
    found: list[tuple[int, int, str]] = []
    for content in tokens:
        at = text.find(content)
        while at != -1:
            found.append((at, -len(content), content))
            at = text.find(content, at + 1)
    if not found:
        return [text] if text else []
    found.sort()
    parts: list[Part] = []
    end = 0
    for start, _, content in found:
        if start < end:
            continue  # inside (or overlapping) the match before
        if start > end:
            parts.append(text[end:start])
        parts.append(tokens[content])
        end = start + len(content)
    if end < len(text):
        parts.append(text[end:])
    return parts


class TurnCache:
    """Parts' ids by the part's text, least recently used out first past `max_chars`."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.entries: OrderedDict[str, array[int]] = OrderedDict()

    def get(self, text: str) -> array[int] | None:
        ids = self.entries.get(text)
        if ids is not None:
            self.entries.move_to_end(text)
        return ids

    def put(self, text: str, ids: list[int]) -> None:
        if len(text) > self.max_chars or text in self.entries:
            return
        self.entries[text] = array("I", ids)
        self.chars += len(text)
        while self.chars > self.max_chars:
            old, _ = self.entries.popitem(last=False)
            self.chars -= len(old)


def lookup(parts: list[Part], cache: TurnCache) -> tuple[dict[str, Sequence[int]], list[str]]:
    """The parts' texts found in `cache`, with their ids (held here: the cache may let them
    go while the others are encoded), and those not found, each once, in order."""
    known: dict[str, Sequence[int]] = {}
    missing: dict[str, None] = {}
    for part in parts:
        if isinstance(part, str) and part not in known and part not in missing:
            ids = cache.get(part)
            if ids is None:
                missing[part] = None
            else:
                known[part] = ids
    return known, list(missing)


def joined(parts: list[Part], ids_of: Mapping[str, Sequence[int]]) -> list[int]:
    """The prompt's ids: each part's, the tokens' between."""
    ids: list[int] = []
    for part in parts:
        if isinstance(part, int):
            ids.append(part)
        else:
            ids += ids_of[part]
    return ids


def sources(
    parts: list[Part], ids_of: Mapping[str, Sequence[int]], encoded: list[str]
) -> tuple[int, int]:
    """The tokens of the prompt's texts whose ids were remembered, and those whose ids were
    encoded for it (`encoded`: the texts that were); the added tokens between count in
    neither."""
    new = set(encoded)
    remembered = fresh = 0
    for part in parts:
        if isinstance(part, str):
            if part in new:
                fresh += len(ids_of[part])
            else:
                remembered += len(ids_of[part])
    return remembered, fresh
