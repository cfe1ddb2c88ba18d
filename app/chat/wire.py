"""Response bodies for chat completions, serialized with orjson.

Fields the OpenAI schema does not allow to be null are omitted rather than sent as null.
Stream frames share a pre-serialized prefix so a token costs one small `orjson.dumps`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from app.token_bytes import TokenTexts
from app.tool_calls import ToolCall

DONE_FRAME = b"data: [DONE]\n\n"


class FrameGroups:
    """What a stream writes, frame by frame, but a choice's finishing frame is held to go
    out with what follows it: another choice's next frame, or the stream's end (usage or
    an error, then `[DONE]`). Each write is a send to the client's socket, and a stream's
    last frames together are one (`app.routes.respond` adds the body's end to it)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = b""

    def frame(self, frame: bytes, *, finishing: bool) -> bytes | None:
        """The bytes to write now, or None while `frame` (a finishing one) is held."""
        if finishing:
            self.held += frame
            return None
        out, self.held = self.held + frame, b""
        return out

    def end(self, tail: bytes = b"") -> bytes:
        """The stream's last write: the held frames, `tail`, `[DONE]`."""
        out, self.held = self.held + tail + DONE_FRAME, b""
        return out


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def usage_dict(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None
) -> dict[str, Any]:
    """OpenAI's usage; `cached_tokens` (the prompt tokens the prefix cache held, as vLLM
    counted them) goes in `prompt_tokens_details` where known."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return usage


def finish_reason(reason: str | None, tool_called: bool = False) -> str | None:
    """vLLM's finish reasons mapped onto OpenAI's enum (`tool_calls` when a call ended it)."""
    if reason is None:
        return None
    if reason in ("stop", "length", "tool_calls", "content_filter"):
        return "tool_calls" if tool_called and reason == "stop" else reason
    return "tool_calls" if tool_called else "stop"


def logprobs_content(
    token_ids: Sequence[int], logprobs: Sequence[dict[int, Any]], top_n: int, texts: TokenTexts
) -> list[dict[str, Any]]:
    """OpenAI's `logprobs.content` items from vLLM's per-position Logprob dicts: `bytes`
    are each token's raw bytes (a token may end inside a character), `token` the text it
    adds to the answer (app/token_bytes.py)."""
    items: list[dict[str, Any]] = []
    for token_id, position in zip(token_ids, logprobs, strict=False):
        chosen = position.get(token_id)
        top: list[dict[str, Any]] = []
        if top_n:
            ranked = sorted(position.items(), key=lambda kv: kv[1].rank or 0)[:top_n]
            for other, lp in ranked:
                text, raw = texts.peek(other)
                top.append({"token": text, "logprob": _finite(lp.logprob), "bytes": list(raw)})
        token, raw = texts.next(token_id)
        items.append(
            {
                "token": token,
                "logprob": _finite(chosen.logprob) if chosen is not None else -9999.0,
                "bytes": list(raw),
                "top_logprobs": top,
            }
        )
    return items


def _finite(value: float) -> float:
    return max(float(value), -9999.0)


@dataclass(frozen=True)
class ChunkWriter:
    """Builds `chat.completion.chunk` SSE frames for one request."""

    prefix: bytes

    @classmethod
    def create(cls, completion_id: str, created: int, model: str) -> ChunkWriter:
        head = orjson.dumps(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
            }
        )
        return cls(prefix=b"data: " + head[:-1] + b',"choices":[')

    def choice(
        self,
        index: int,
        delta: dict[str, Any],
        finish: str | None = None,
        logprobs: list[dict[str, Any]] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> bytes:
        """One choice's chunk; `usage` (the counts so far) for `continuous_usage_stats`."""
        body: dict[str, Any] = {
            "index": index,
            "delta": delta,
            "logprobs": {"content": logprobs, "refusal": None} if logprobs is not None else None,
            "finish_reason": finish,
        }
        tail = b"]}\n\n" if usage is None else b'],"usage":' + orjson.dumps(usage) + b"}\n\n"
        return self.prefix + orjson.dumps(body) + tail

    def usage(self, usage: dict[str, Any]) -> bytes:
        """The usage chunk (`usage_dict`'s), with no choices."""
        return self.prefix + b'],"usage":' + orjson.dumps(usage) + b"}\n\n"


def chat_completion(
    completion_id: str,
    created: int,
    model: str,
    choices: list[dict[str, Any]],
    usage: dict[str, Any],
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": choices,
        "usage": usage,
    }


def assistant_message(
    content: str, reasoning: str | None, tool_calls: Sequence[ToolCall] = ()
) -> dict[str, Any]:
    """The assistant message; reasoning goes under both names clients read.

    With tool calls, empty content is null and `tool_calls` lists them (it is left out,
    never null, without).
    """
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = [call.wire() for call in tool_calls]
        if not content.strip():
            message["content"] = None
    if reasoning:
        message["reasoning_content"] = reasoning
        message["reasoning"] = reasoning
    return message
