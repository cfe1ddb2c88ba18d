"""Every body the gateway sends validates against OpenAI's own OpenAPI schemas."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.integration.conftest import LiveGateway
from tests.openapi_schema import requires_openapi, validate_schema

pytestmark = requires_openapi


def post(
    gateway: LiveGateway, payload: dict[str, object], path: str = "/chat/completions"
) -> httpx.Response:
    return httpx.post(gateway.v1 + path, json=payload, timeout=120)


def sse_frames(gateway: LiveGateway, payload: dict[str, object]) -> list[str]:
    with httpx.stream("POST", gateway.v1 + "/chat/completions", json=payload, timeout=120) as r:
        assert r.status_code == 200
        return [line[6:] for line in r.iter_lines() if line.startswith("data: ")]


def test_chat_completion(gateway: LiveGateway) -> None:
    r = post(
        gateway,
        {
            "model": gateway.model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 30,
            "logprobs": True,
            "top_logprobs": 2,
            "n": 2,
        },
    )
    assert r.status_code == 200
    validate_schema("CreateChatCompletionResponse", r.json())


def test_chat_completion_with_reasoning(gateway: LiveGateway) -> None:
    r = post(
        gateway,
        {
            "model": gateway.model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 120,
            "temperature": 0,
        },
    )
    assert r.status_code == 200
    validate_schema("CreateChatCompletionResponse", r.json())


@pytest.mark.parametrize("usage", [True, False])
def test_stream_chunks(gateway: LiveGateway, usage: bool) -> None:
    frames = sse_frames(
        gateway,
        {
            "model": gateway.model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 40,
            "stream": True,
            "stream_options": {"include_usage": usage},
            "logprobs": True,
        },
    )
    assert frames[-1] == "[DONE]"
    for frame in frames[:-1]:
        validate_schema("CreateChatCompletionStreamResponse", json.loads(frame))


def test_models(gateway: LiveGateway) -> None:
    r = httpx.get(gateway.v1 + "/models", timeout=10)
    validate_schema("ListModelsResponse", r.json())


def test_model_retrieve(gateway: LiveGateway) -> None:
    r = httpx.get(gateway.v1 + "/models/qwen", timeout=10)
    assert r.status_code == 200
    validate_schema("Model", r.json())
    r = httpx.get(gateway.v1 + "/models/gpt-4o", timeout=10)
    assert r.status_code == 404
    validate_schema("ErrorResponse", r.json())


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        ({"model": "nope", "messages": [{"role": "user", "content": "hi"}]}, 404),
        ({"messages": []}, 400),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, 400),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100000}, 400),
    ],
)
def test_errors(gateway: LiveGateway, payload: dict[str, object], status: int) -> None:
    r = post(gateway, payload)
    assert r.status_code == status
    validate_schema("ErrorResponse", r.json())


def test_unknown_route_error(gateway: LiveGateway) -> None:
    r = httpx.get(gateway.base_url + "/v1/nothing", timeout=10)
    assert r.status_code == 404
    validate_schema("ErrorResponse", r.json())


# What an SDK that sends every field sends when the caller set none of them
CHAT_NULLS = ["stream", "n", "logprobs", "top_logprobs", "temperature", "top_p", "stop",
              "seed", "max_tokens", "max_completion_tokens", "presence_penalty",
              "frequency_penalty", "logit_bias", "stream_options", "store", "metadata",
              "reasoning_effort", "service_tier", "user"]  # fmt: skip
COMPLETION_NULLS = ["stream", "n", "logprobs", "echo", "best_of", "suffix", "temperature",
                    "top_p", "stop", "seed", "presence_penalty", "frequency_penalty",
                    "logit_bias", "stream_options", "user"]  # fmt: skip


def test_nulls_mean_the_defaults(gateway: LiveGateway) -> None:
    """`"stream": null, "n": null, "logprobs": null, ...` are the defaults, not 400s."""
    chat = {"messages": [{"role": "user", "content": "hi"}], **dict.fromkeys(CHAT_NULLS)}
    r = post(gateway, {**chat, "max_tokens": 8})
    assert r.status_code == 200, r.text
    body = r.json()
    validate_schema("CreateChatCompletionResponse", body)
    assert len(body["choices"]) == 1 and body["choices"][0]["logprobs"] is None
    legacy = {"prompt": "hi", **dict.fromkeys(COMPLETION_NULLS), "max_tokens": None}
    r = post(gateway, legacy, path="/completions")
    assert r.status_code == 200, r.text
    body = r.json()
    validate_schema("CreateCompletionResponse", body)
    assert len(body["choices"]) == 1 and body["choices"][0]["logprobs"] is None
    assert body["usage"]["completion_tokens"] <= 16  # max_tokens: null is OpenAI's 16
