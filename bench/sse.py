"""Read a streamed (SSE) chat response as it arrives, for the harness's own probes."""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@contextlib.contextmanager
def chat_stream(
    port: int, body: dict[str, Any]
) -> Iterator[Iterator[tuple[float, dict[str, Any]]]]:
    """POST `body` to the server's /v1/chat/completions on loopback; its SSE events with
    their arrival in seconds since sending. ValueError with the answer when not a 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        start = time.perf_counter()
        payload = json.dumps(body).encode()
        conn.request("POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"})
        response = conn.getresponse()
        if response.status != 200:
            answer = response.read(300).decode(errors="replace")
            raise ValueError(f"HTTP {response.status}: {answer}")
        yield sse_events(response, start)
    finally:
        conn.close()


def sse_events(
    res: http.client.HTTPResponse, start: float
) -> Iterator[tuple[float, dict[str, Any]]]:
    """Each JSON `data:` payload of `res` with its arrival in seconds since `start`
    (a `time.perf_counter()` value); `[DONE]` and comments are skipped."""
    buf = b""
    while True:
        piece = res.read1(65536)
        if not piece:
            return
        now = time.perf_counter() - start
        buf += piece
        while b"\n\n" in buf:
            frame, buf = buf.split(b"\n\n", 1)
            event = data_event(frame)
            if event is not None:
                yield now, event


def data_event(frame: bytes) -> dict[str, Any] | None:
    """The JSON payload of one SSE `data: {...}` frame or line; None for anything else
    (`[DONE]`, comments, a payload that is not JSON)."""
    frame = frame.strip()
    if not frame.startswith(b"data: {"):
        return None
    try:
        event: dict[str, Any] = json.loads(frame[6:])
    except ValueError:
        return None
    return event


def stream_body(
    model: str, prompt: str, out_len: int, sampling: dict[str, float]
) -> dict[str, Any]:
    """A streamed chat request as the benchmark sends one: one user message, `out_len`
    tokens exactly (`ignore_eos`)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": out_len,
        "ignore_eos": True,
        "stream": True,
        **sampling,
    }


def first_delta(event: dict[str, Any]) -> dict[str, Any] | None:
    """The first choice's delta of a stream chunk; None for a chunk without choices."""
    choices = event.get("choices") or []
    return (choices[0].get("delta") or {}) if choices else None


def has_text(delta: dict[str, Any] | None) -> bool:
    """Whether a delta carries generated text (answer or reasoning)."""
    return bool(delta and (delta.get("content") or delta.get("reasoning_content")))


@dataclass
class StreamTimes:
    """When the chunks of one streamed chat response arrived, in seconds since sending;
    `see` each event in order. (Two chunks read at once share a time: hence
    `first_has_text`.)"""

    first: float | None = None  # the first chunk with choices: what vllm bench serve times
    first_has_text: bool = False
    text: float | None = None  # the first chunk with text
    end: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)

    def see(self, now: float, event: dict[str, Any]) -> None:
        self.end = now
        delta = first_delta(event)
        if delta is not None:
            if self.first is None:
                self.first, self.first_has_text = now, has_text(delta)
            if self.text is None and has_text(delta):
                self.text = now
        self.usage = event.get("usage") or self.usage
