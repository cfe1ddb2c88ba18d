"""`usage.prompt_tokens_details.cached_tokens`: the prompt tokens vLLM's prefix cache held,
as OpenAI reports them (vLLM's own server only with `--enable-prompt-tokens-details`).

The engine's KV blocks are 128 tokens on the CPU (vLLM's default there), so each prompt
here is long enough to fill several, and starts with its own id so that its first call
finds nothing cached."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import openai
from langchain_openai import ChatOpenAI

from tests.integration.conftest import LiveGateway
from tests.openapi_schema import validate_schema


def long_text() -> str:
    return uuid.uuid4().hex + " " + " ".join(f"word{i}" for i in range(200))


def cached(usage: Any) -> int:
    """The count from a usage body, or from the openai SDK's usage object."""
    if isinstance(usage, dict):
        count = usage["prompt_tokens_details"]["cached_tokens"]
    else:
        count = usage.prompt_tokens_details.cached_tokens
    assert isinstance(count, int)
    return count


def test_a_repeated_chat_prompt_reports_its_cached_tokens(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    messages = [{"role": "user", "content": long_text()}]
    first = client.chat.completions.create(model=gateway.model, messages=messages, max_tokens=2)
    second = client.chat.completions.create(model=gateway.model, messages=messages, max_tokens=2)
    assert first.usage is not None and second.usage is not None
    assert cached(first.usage) == 0
    assert 128 <= cached(second.usage) < second.usage.prompt_tokens
    assert cached(second.usage) % 16 == 0  # whole KV blocks (128 tokens on the CPU, 16 on a GPU)


def test_the_streamed_usage_and_the_schema_carry_it(gateway: LiveGateway) -> None:
    payload = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": long_text()}],
        "max_tokens": 2,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    httpx.post(gateway.v1 + "/chat/completions", json=payload, timeout=120).raise_for_status()
    with httpx.stream("POST", gateway.v1 + "/chat/completions", json=payload, timeout=120) as r:
        frames = [line[6:] for line in r.iter_lines() if line.startswith("data: {")]
    last = json.loads(frames[-1])
    assert last["choices"] == [] and cached(last["usage"]) >= 128
    validate_schema("CreateChatCompletionStreamResponse", last)


def test_completions_add_up_their_prompts_cached_tokens(gateway: LiveGateway) -> None:
    text = long_text()
    body = {"model": gateway.model, "prompt": text, "max_tokens": 2}
    url = gateway.v1 + "/completions"
    assert cached(httpx.post(url, json=body, timeout=120).json()["usage"]) == 0
    again = httpx.post(url, json={**body, "prompt": [text, text + " more"]}, timeout=120).json()
    assert cached(again["usage"]) >= 2 * 128
    validate_schema("CreateCompletionResponse", again)


def test_langchain_reads_them_as_cache_reads(gateway: LiveGateway) -> None:
    model = ChatOpenAI(model=gateway.model, base_url=gateway.v1, api_key="EMPTY", max_tokens=2)
    text = long_text()
    model.invoke(text)
    usage = model.invoke(text).usage_metadata
    assert usage is not None
    assert usage["input_token_details"]["cache_read"] >= 128


def test_a_thinking_budget_reports_the_prompts_cached_tokens(gateway: LiveGateway) -> None:
    body = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": long_text()}],
        "max_tokens": 8,
        "max_reasoning_tokens": 2,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    url = gateway.v1 + "/chat/completions"
    assert cached(httpx.post(url, json=body, timeout=120).json()["usage"]) == 0
    assert cached(httpx.post(url, json=body, timeout=120).json()["usage"]) >= 128
