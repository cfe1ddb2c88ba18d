"""`/v1/completions`, `/tokenize`, `/detokenize` and `/version` through the real engine."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.integration.conftest import LiveGateway
from tests.integration.test_metrics import scrape, total
from tests.openapi_schema import validate_schema


def post(gateway: LiveGateway, path: str, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(gateway.base_url + path, json=payload, timeout=120)


def completion(gateway: LiveGateway, **payload: Any) -> dict[str, Any]:
    r = post(gateway, "/v1/completions", {"model": gateway.model, **payload})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    validate_schema("CreateCompletionResponse", body)
    return body


def test_sdk_completion(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.completions.create(model=gateway.model, prompt="Once upon a time", max_tokens=8)
    assert resp.object == "text_completion"
    assert resp.id.startswith("cmpl-")
    assert resp.model == gateway.model
    assert resp.choices[0].finish_reason in ("stop", "length")
    assert resp.usage is not None and 0 < resp.usage.completion_tokens <= 8


def test_default_max_tokens_is_16(gateway: LiveGateway) -> None:
    body = completion(gateway, prompt="hello", ignore_eos=True)
    assert body["usage"]["completion_tokens"] == 16
    assert body["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(
    "prompt",
    ["one prompt", ["first", "second"], [101, 102, 103], [[101, 102], [103]]],
)
def test_prompt_shapes_and_choice_indexes(gateway: LiveGateway, prompt: Any) -> None:
    body = completion(gateway, prompt=prompt, max_tokens=3, n=2, temperature=1.0, ignore_eos=True)
    prompts = 1 if isinstance(prompt, str) or isinstance(prompt[0], int) else len(prompt)
    assert sorted(c["index"] for c in body["choices"]) == list(range(2 * prompts))
    assert body["usage"]["completion_tokens"] == 3 * 2 * prompts


def test_echo_and_logprobs_without_nulls(gateway: LiveGateway) -> None:
    body = completion(
        gateway, prompt="Hello there", max_tokens=4, echo=True, logprobs=2, ignore_eos=True
    )
    choice = body["choices"][0]
    assert choice["text"].startswith("Hello there")
    logprobs = choice["logprobs"]
    lengths = {
        len(logprobs[k]) for k in ("tokens", "token_logprobs", "top_logprobs", "text_offset")
    }
    prompt_tokens = body["usage"]["prompt_tokens"]
    assert lengths == {prompt_tokens + 4}
    assert logprobs["token_logprobs"][0] == 0.0  # the first prompt token has no logprob
    assert all(isinstance(x, float) for x in logprobs["token_logprobs"])
    assert all(len(top) <= 3 and top for top in logprobs["top_logprobs"])
    assert logprobs["text_offset"] == sorted(logprobs["text_offset"])


def test_echo_only_scores_the_prompt(gateway: LiveGateway) -> None:
    body = completion(gateway, prompt="Hello there", max_tokens=0, echo=True, logprobs=0)
    choice = body["choices"][0]
    assert choice["text"] == "Hello there"
    assert len(choice["logprobs"]["tokens"]) == body["usage"]["prompt_tokens"]
    assert body["usage"]["completion_tokens"] == 0
    assert choice["finish_reason"] == "length"


def test_logprobs_without_echo(gateway: LiveGateway) -> None:
    body = completion(gateway, prompt="Hi", max_tokens=5, logprobs=1, ignore_eos=True)
    logprobs = body["choices"][0]["logprobs"]
    assert len(logprobs["tokens"]) == 5 and logprobs["text_offset"][0] == 0
    assert all(isinstance(top, dict) and top for top in logprobs["top_logprobs"])


def stream_frames(gateway: LiveGateway, payload: dict[str, Any]) -> list[dict[str, Any]]:
    body = {"model": gateway.model, "stream": True, **payload}
    with httpx.stream("POST", gateway.base_url + "/v1/completions", json=body, timeout=120) as r:
        assert r.status_code == 200
        frames = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    return [json.loads(f) for f in frames[:-1]]


def test_streaming_matches_the_whole_answer(gateway: LiveGateway) -> None:
    payload = {"prompt": "The sky is", "max_tokens": 12, "temperature": 0, "logprobs": 1}
    whole = completion(gateway, **payload)["choices"][0]
    chunks = stream_frames(gateway, {**payload, "stream_options": {"include_usage": True}})
    text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
    assert text == whole["text"]
    tokens = [t for c in chunks if c["choices"] for t in c["choices"][0]["logprobs"]["tokens"]]
    assert tokens == whole["logprobs"]["tokens"]
    finished = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finished and finished[-1]["choices"][0]["finish_reason"] == whole["finish_reason"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    validate_schema("CreateCompletionResponse", finished[-1])
    validate_schema("CreateCompletionResponse", chunks[-1])


def test_sdk_streaming_with_echo(client: openai.OpenAI, gateway: LiveGateway) -> None:
    parts = [
        chunk.choices[0].text
        for chunk in client.completions.create(
            model=gateway.model, prompt="Echo me", max_tokens=5, echo=True, stream=True
        )
        if chunk.choices
    ]
    assert parts[0].startswith("Echo me")


def test_structured_completion(gateway: LiveGateway) -> None:
    body = completion(gateway, prompt="Answer:", max_tokens=20, guided_choice=["yes", "no"])
    assert body["choices"][0]["text"] in ("yes", "no")


def test_model_names_and_invisible_characters(gateway: LiveGateway) -> None:
    for name in ("Qwen/Qwen3-0.6B", "qwen", gateway.model + "/"):
        body = completion(gateway, model=name, prompt="hi", max_tokens=1)
        assert body["model"] == name
    plain = completion(gateway, prompt="hello", max_tokens=1)
    hidden = completion(gateway, prompt="hel\u200blo\u2060", max_tokens=1)
    assert hidden["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]


@pytest.mark.parametrize(
    ("payload", "status", "param"),
    [
        ({"prompt": "hi", "suffix": "bye"}, 400, "suffix"),
        ({"prompt": "hi", "model": "nope"}, 404, "model"),
        ({"prompt": "hi", "max_tokens": 0}, 400, "max_tokens"),
        ({"prompt": "hi", "max_tokens": 100000}, 400, "max_tokens"),
        ({"prompt": [10**7]}, 400, "prompt"),
        ({"prompt": ""}, 400, "prompt"),
        ({}, 400, "prompt"),
        ({"prompt": "hi", "logprobs": 50}, 400, "logprobs"),
        ({"prompt": "hi", "logit_bias": {"10000000": 1}}, 400, "logit_bias"),
        ({"prompt": "hi", "stop": ""}, 400, "stop"),
    ],
)
def test_errors(gateway: LiveGateway, payload: dict[str, Any], status: int, param: str) -> None:
    r = post(gateway, "/v1/completions", payload)
    assert r.status_code == status, r.text
    validate_schema("ErrorResponse", r.json())
    assert r.json()["error"]["param"] == param


def test_tokenize_and_detokenize(gateway: LiveGateway) -> None:
    r = post(gateway, "/tokenize", {"prompt": "Hello world", "return_token_strs": True})
    body = r.json()
    assert r.status_code == 200
    assert set(body) == {"count", "max_model_len", "tokens", "token_strs"}
    assert body["count"] == len(body["tokens"]) == len(body["token_strs"])
    assert body["max_model_len"] == 2048
    back = post(gateway, "/detokenize", {"tokens": body["tokens"]}).json()
    assert back == {"prompt": "Hello world"}
    assert "token_strs" not in post(gateway, "/tokenize", {"prompt": "x"}).json()


def test_tokenize_messages_counts_what_chat_uses(gateway: LiveGateway) -> None:
    messages = [{"role": "user", "content": "How many tokens is this?"}]
    count = post(gateway, "/tokenize", {"model": gateway.model, "messages": messages}).json()[
        "count"
    ]
    chat = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"model": gateway.model, "messages": messages, "max_tokens": 1},
        timeout=120,
    ).json()
    assert chat["usage"]["prompt_tokens"] == count


@pytest.mark.parametrize(
    ("path", "payload", "status"),
    [
        ("/tokenize", {}, 400),
        ("/tokenize", {"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, 400),
        ("/tokenize", {"prompt": "a", "model": "nope"}, 404),
        ("/detokenize", {"tokens": [10**7]}, 400),
        ("/detokenize", {"tokens": [-1]}, 400),
    ],
)
def test_tokenize_errors(
    gateway: LiveGateway, path: str, payload: dict[str, Any], status: int
) -> None:
    r = post(gateway, path, payload)
    assert r.status_code == status
    validate_schema("ErrorResponse", r.json())


def test_version(gateway: LiveGateway) -> None:
    body = httpx.get(gateway.base_url + "/version", timeout=10).json()
    assert isinstance(body["version"], str) and body["version"]


def test_routes_are_counted_in_metrics(gateway: LiveGateway) -> None:
    completion(gateway, prompt="hi", max_tokens=1)
    post(gateway, "/tokenize", {"prompt": "hi"})
    metrics = scrape(gateway)
    for route in ("/v1/completions", "/tokenize"):
        assert total(metrics, "gateway_requests", "gateway_requests_total", route=route) >= 1
