"""Response bodies of `/v1/completions` (OpenAI's legacy `text_completion` shape).

`logprobs` is the legacy object: `tokens`, `token_logprobs`, `top_logprobs` and
`text_offset`, one entry per token. OpenAI's schema allows no nulls in these lists, so
the first token of an echoed prompt (which has no logprob: nothing comes before it) is
reported with logprob 0.0 and itself as its only top entry; `-inf` is clamped to -9999.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.chat.wire import usage_dict
from app.token_bytes import TokenTexts

FLOOR = -9999.0


def finish_reason(reason: str | None) -> str | None:
    """vLLM's finish reasons on the legacy enum (`stop`, `length`, `content_filter`)."""
    if reason is None or reason in ("stop", "length", "content_filter"):
        return reason
    return "stop"


@dataclass
class LegacyLogprobs:
    """Accumulates the legacy logprobs object of one choice."""

    tokens: list[str] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    text_offset: list[int] = field(default_factory=list)
    offset: int = 0  # where the next token starts in the choice's text

    def add(
        self,
        token_ids: Sequence[int],
        positions: Sequence[dict[int, Any] | None],
        top_n: int,
        texts: TokenTexts,
    ) -> LegacyLogprobs:
        """Append tokens; returns just the new part (a stream chunk's logprobs). A token's
        text is what it adds to the choice's text (app/token_bytes.py): "" for one that
        ends inside a character, so `tokens` join up to the text and `text_offset` holds."""
        new = LegacyLogprobs(offset=self.offset)
        for token_id, position in zip(token_ids, positions, strict=False):
            chosen = position.get(token_id) if position is not None else None
            alternatives: dict[str, float] = {}
            if position is not None:
                for other, lp in sorted(position.items(), key=lambda kv: kv[1].rank or 0):
                    if (lp.rank or 0) <= top_n:
                        alternatives.setdefault(texts.peek(other)[0], _finite(lp.logprob))
            token = texts.next(token_id)[0]
            logprob = _finite(chosen.logprob) if chosen is not None else 0.0
            new.tokens.append(token)
            new.token_logprobs.append(logprob)
            new.top_logprobs.append(
                {token: logprob}
                | {text: value for text, value in alternatives.items() if text != token}
            )
            new.text_offset.append(new.offset)
            new.offset += len(token)
        self.tokens += new.tokens
        self.token_logprobs += new.token_logprobs
        self.top_logprobs += new.top_logprobs
        self.text_offset += new.text_offset
        self.offset = new.offset
        return new

    def wire(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "token_logprobs": self.token_logprobs,
            "top_logprobs": self.top_logprobs,
            "text_offset": self.text_offset,
        }


def _finite(value: float) -> float:
    return max(float(value), FLOOR)


def choice(
    index: int, text: str, logprobs: dict[str, Any] | None, finish: str | None
) -> dict[str, Any]:
    return {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish}


def completion(
    completion_id: str,
    created: int,
    model: str,
    choices: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": choices,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def chunk(
    completion_id: str,
    created: int,
    model: str,
    choices: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
) -> bytes:
    """One SSE frame (the stream shares the non-streamed shape, as OpenAI's does)."""
    body = completion(completion_id, created, model, choices, usage)
    return b"data: " + orjson.dumps(body) + b"\n\n"


__all__ = ["LegacyLogprobs", "choice", "chunk", "completion", "finish_reason", "usage_dict"]
