"""The gateway's own detokenizer for plain chat requests: the text each step's new tokens
add, exactly as vLLM's would give it, without vLLM's decode stream over the whole prompt.

vLLM's fast detokenizer starts each request's `tokenizers` `DecodeStream` with all the
prompt's ids, and its first step decodes them: 0.45 ms for a 1,040-token prompt on the
2-core CI machine (0.01 ms for 24 ids). vLLM pays it in the output handler, after its
first-token timestamp, and for a wave of requests one after the other before any of
their first tokens goes out. For a byte-level BPE vocabulary the text a new token adds
does not depend on the prompt, so for requests whose text needs nothing else from vLLM
(no stop strings, no logprobs, special tokens skipped) and whose prompt is long enough to
matter (`MIN_PROMPT_TOKENS`) the gateway asks the engine for
token ids only (`SamplingParams(detokenize=False)`) and decodes them here: each token's
bytes appended, held back while the text would end in U+FFFD (as `DecodeStream` holds an
unfinished character), special tokens skipped, and the token that stopped the sequence
left out (vLLM leaves it out unless `include_stop_str_in_output`).

Whether that is vLLM's text, delta for delta, is checked once per tokenizer against
`tokenizers`' own `DecodeStream` (`own_detokenizer`); where it is not, vLLM detokenizes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from app.token_bytes import TokenBytes, bytes_to_unicode, is_byte_level

REPLACEMENT: Final = "\ufffd"

MIN_PROMPT_TOKENS: Final = 512
"""Prompts shorter than this keep vLLM's detokenizer: its first step costs in proportion to
the prompt (0.26-0.74 ms at 1,024 ids on the CI machine, 0.08-0.18 ms at 128), so below
this there is little to save, and on the CI machine at 128-token prompts the two ways did
not separate (`bench.run` 128x64@64, ten pairs in alternating order: the gateway's own
decoding ahead in four, the medians 65.0 against 68.0 req/s) while the gateway process's
CPU per token stayed level."""

CHECK_SEQUENCES: Final = 48
CHECK_STEPS: Final = 24
CHECK_PROMPT: Final = "<|im_start|>user\nhi 你好<|im_end|>\n<|im_start|>assistant\n"


class TextStream:
    """One sequence's text, token by token (vLLM's `FastIncrementalDetokenizer` with
    `skip_special_tokens`)."""

    __slots__ = ("_detokenizer", "_pending")

    def __init__(self, detokenizer: Detokenizer) -> None:
        self._detokenizer = detokenizer
        self._pending = b""  # bytes whose text ends in U+FFFD so far: held back

    def push(self, token_ids: Sequence[int], *, stopped: bool = False) -> str:
        """The text `token_ids` add; `stopped`: the last of them stopped the sequence
        (an EOS or stop token id), and adds nothing."""
        if stopped:
            token_ids = token_ids[:-1]
        known = self._detokenizer.known
        skipped = self._detokenizer.skipped
        out = ""
        for token_id in token_ids:
            if token_id in skipped:
                continue
            raw = known.get(token_id)
            if raw is None:
                raw = self._detokenizer.read(token_id)
            self._pending += raw
            text = self._pending.decode("utf-8", "replace")
            if not text.endswith(REPLACEMENT):
                out += text
                self._pending = b""
        return out


@dataclass(frozen=True)
class Detokenizer:
    """Makes a `TextStream` per sequence for one tokenizer; keeps each token's bytes once
    read."""

    token_bytes: TokenBytes
    skipped: frozenset[int]  # the special tokens, skipped as `skip_special_tokens` does
    known: dict[int, bytes] = field(default_factory=dict)

    def stream(self) -> TextStream:
        return TextStream(self)

    def read(self, token_id: int) -> bytes:
        raw = self.token_bytes(token_id)
        found = self.known[token_id] = raw.encode("utf-8") if isinstance(raw, str) else raw
        return found


class SequenceTexts:
    """The text of each sequence's new tokens in a request's engine outputs (vLLM's
    `CompletionOutput`s: `index`, `token_ids`, `finish_reason`)."""

    def __init__(self, detokenizer: Detokenizer, keep_stop: bool) -> None:
        self.detokenizer = detokenizer
        self.keep_stop = keep_stop  # include_stop_str_in_output: the stop token's text too
        self.streams: dict[int, TextStream] = {}

    def text(self, out: Any) -> str:
        stream = self.streams.get(out.index)
        if stream is None:
            stream = self.streams[out.index] = self.detokenizer.stream()
        stopped = out.finish_reason == "stop" and not self.keep_stop
        return stream.push(out.token_ids, stopped=stopped)


def special_ids(tokenizer: Any) -> frozenset[int]:
    """The ids of the tokenizer's special added tokens."""
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return frozenset(i for i, token in added.items() if getattr(token, "special", False))


def own_detokenizer(tokenizer: Any, token_bytes: TokenBytes) -> Detokenizer | None:
    """A `Detokenizer` when it gives this tokenizer's `DecodeStream` text step for step on
    a fixed sample (`check_ids`); None otherwise (vLLM keeps detokenizing)."""
    if not is_byte_level(tokenizer):
        return None
    detokenizer = Detokenizer(token_bytes, special_ids(tokenizer))
    try:
        return detokenizer if matches_decode_stream(tokenizer, detokenizer) else None
    except Exception:  # no DecodeStream in this `tokenizers`, or a tokenizer without a backend
        return None


def matches_decode_stream(tokenizer: Any, detokenizer: Detokenizer) -> bool:
    """Whether `detokenizer` gives `DecodeStream`'s text, step for step, on `check_ids`."""
    from tokenizers.decoders import DecodeStream

    backend = tokenizer.backend_tokenizer
    prompt = tokenizer.encode(CHECK_PROMPT, add_special_tokens=False)
    for ids in check_ids(tokenizer):
        theirs = DecodeStream(ids=prompt, skip_special_tokens=True)
        ours = detokenizer.stream()
        for token_id in ids:
            if (theirs.step(backend, token_id) or "") != ours.push([token_id]):
                return False
    return True


def check_ids(tokenizer: Any) -> list[list[int]]:
    """Token sequences that try the rules: every added token, each after a random id,
    then random sequences; two in five random ids are a lone byte of 0x80-0xFF (part of a
    character that other tokens finish, or bytes that can't be UTF-8)."""
    added = sorted(getattr(tokenizer, "added_tokens_decoder", None) or {})
    high = lone_byte_ids(tokenizer)
    rng = random.Random(0)
    size = len(tokenizer)

    def pick() -> int:
        if high and rng.random() < 0.4:
            return rng.choice(high)
        return rng.randrange(size)

    first = [i for token_id in added for i in (pick(), token_id)]
    return [first] + [[pick() for _ in range(CHECK_STEPS)] for _ in range(CHECK_SEQUENCES)]


def lone_byte_ids(tokenizer: Any) -> list[int]:
    """The ids of the byte-level vocabulary's one-byte tokens of 0x80-0xFF: pieces of a
    character that other tokens finish, or bytes that can't be UTF-8."""
    pieces = (bytes_to_unicode()[b] for b in range(0x80, 0x100))
    ids = (tokenizer.convert_tokens_to_ids(piece) for piece in pieces)
    return [int(i) for i in ids if isinstance(i, int) and i >= 0]
