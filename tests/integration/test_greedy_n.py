"""`temperature: 0` with `n > 1` answers n identical choices (vLLM alone gives a 400
"n must be 1 when using greedy sampling"), whole and streamed, chat and completions;
usage counts n x the completion tokens, as OpenAI bills n choices. `top_p: 0` (vLLM
alone: a 400) keeps the most likely token alone: the greedy answer at any temperature."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.conftest import LiveGateway
from tests.integration.live_helpers import post_ok, sse_frames
from tests.openapi_schema import load_openapi, validate_schema

HI = [{"role": "user", "content": "hi"}]
USAGE = {"stream_options": {"include_usage": True}}


def usage_frames(gateway: LiveGateway, path: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
    return sse_frames(gateway, path, {**payload, **USAGE})


def test_chat(gateway: LiveGateway) -> None:
    payload = {"messages": HI, "temperature": 0, "n": 3, "max_tokens": 12, "logprobs": True}
    body = post_ok(gateway, "/chat/completions", payload)
    if load_openapi() is not None:
        validate_schema("CreateChatCompletionResponse", body)
    choices = body["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2]
    assert len({json.dumps(c["message"]) for c in choices}) == 1
    assert len({json.dumps(c["logprobs"]) for c in choices}) == 1
    single = post_ok(gateway, "/chat/completions", {**payload, "n": 1})
    assert choices[0]["message"] == single["choices"][0]["message"]
    one = single["usage"]["completion_tokens"]
    assert body["usage"]["completion_tokens"] == 3 * one
    assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]


def test_streamed_chat(gateway: LiveGateway) -> None:
    payload = {"messages": HI, "temperature": 0, "n": 2, "max_tokens": 12}
    texts = {0: "", 1: ""}
    finished = set()
    chunks = usage_frames(gateway, "/chat/completions", payload)
    for chunk in chunks:
        if load_openapi() is not None:
            validate_schema("CreateChatCompletionStreamResponse", chunk)
        for choice in chunk["choices"]:
            delta = choice["delta"]
            texts[choice["index"]] += delta.get("reasoning_content", "") + (
                delta.get("content") or ""
            )
            if choice["finish_reason"]:
                finished.add(choice["index"])
    assert finished == {0, 1} and texts[0] == texts[1] and texts[0]
    whole = post_ok(gateway, "/chat/completions", {**payload, "n": 1})
    assert chunks[-1]["usage"]["completion_tokens"] == 2 * whole["usage"]["completion_tokens"]


@pytest.mark.parametrize("stream", [False, True])
def test_completions(gateway: LiveGateway, stream: bool) -> None:
    """Two prompts x n=2: choice `p * n + i`, identical within a prompt."""
    payload = {"prompt": ["The sky is", "Once"], "temperature": 0, "n": 2, "max_tokens": 6}
    texts: dict[int, str] = {}
    if stream:
        chunks = usage_frames(gateway, "/completions", payload)
        for chunk in chunks:
            for choice in chunk["choices"]:
                texts[choice["index"]] = texts.get(choice["index"], "") + choice["text"]
        usage = chunks[-1]["usage"]
    else:
        body = post_ok(gateway, "/completions", payload)
        if load_openapi() is not None:
            validate_schema("CreateCompletionResponse", body)
        texts = {c["index"]: c["text"] for c in body["choices"]}
        usage = body["usage"]
    assert sorted(texts) == [0, 1, 2, 3]
    assert texts[0] == texts[1] and texts[2] == texts[3]
    single = post_ok(gateway, "/completions", {**payload, "n": 1})
    assert [c["text"] for c in single["choices"]] == [texts[0], texts[2]]
    assert usage["completion_tokens"] == 2 * single["usage"]["completion_tokens"]


@pytest.mark.parametrize("path", ["/chat/completions", "/completions"])
def test_top_p_zero_answers_the_greedy_text(gateway: LiveGateway, path: str) -> None:
    base: dict[str, Any] = {"max_tokens": 40, "ignore_eos": True}
    base |= {"messages": HI} if path == "/chat/completions" else {"prompt": "The sky is"}

    def text(body: dict[str, Any]) -> list[str]:
        return [json.dumps(c.get("message") or c["text"]) for c in body["choices"]]

    greedy = text(post_ok(gateway, path, {**base, "temperature": 0}))
    sampled = post_ok(gateway, path, {**base, "temperature": 2, "top_p": 0, "n": 3, "seed": 5})
    assert text(sampled) == greedy * 3
    # the same temperature without top_p 0 samples: its three answers are not all greedy
    free = post_ok(gateway, path, {**base, "temperature": 2, "top_p": 1, "n": 3, "seed": 5})
    assert text(free) != greedy * 3
