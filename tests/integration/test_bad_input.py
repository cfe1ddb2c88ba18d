"""Bad input gets a clear OpenAI-style error with the right status and code."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.integration.conftest import LiveGateway
from tests.openapi_schema import load_openapi, validate_schema

HI = [{"role": "user", "content": "hi"}]


def oversized_chunks() -> Iterator[bytes]:
    """9 MiB of chat request (over the 8 MiB limit) in 64 KiB chunks."""
    yield b'{"messages":[{"role":"user","content":"'
    for _ in range(9 * 16):
        yield b"x" * 65536
    yield b'"}]}'


CASES: list[tuple[str, dict[str, Any], int, str, str | None]] = [
    # name, request kwargs for httpx, status, code, param
    ("invalid json", {"content": b"{not json", "headers": {"content-type": "application/json"}},
     400, "invalid_json", None),
    ("empty body", {"content": b"", "headers": {"content-type": "application/json"}},
     400, "invalid_json", None),
    ("wrong content type", {"content": b"messages=hi", "headers": {"content-type": "text/plain"}},
     400, "invalid_request", None),
    ("missing messages", {"json": {"model": None}}, 400, "invalid_request", "messages"),
    ("empty messages", {"json": {"messages": []}}, 400, "invalid_request", "messages"),
    ("unknown role", {"json": {"messages": [{"role": "robot", "content": "x"}]}},
     400, "invalid_request", "messages[0].role"),
    ("unsupported part", {"json": {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}},
     400, "invalid_request", "messages[0].content"),
    ("content a number", {"json": {"messages": [{"role": "user", "content": 5}]}},
     400, "invalid_request", "messages[0].content"),
    ("text part without text", {"json": {"messages": [{"role": "user", "content": [
        {"type": "text"}]}]}}, 400, "invalid_request", "messages[0].content[0].text"),
    ("JSON nested too deeply", {"content": b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000
                                + b"}", "headers": {"content-type": "application/json"}},
     400, "invalid_json", None),
    ("max_tokens zero", {"json": {"messages": HI, "max_tokens": 0}}, 400, "invalid_request",
     "max_tokens"),
    ("max_tokens negative", {"json": {"messages": HI, "max_tokens": -5}}, 400, "invalid_request",
     "max_tokens"),
    ("n zero", {"json": {"messages": HI, "n": 0}}, 400, "invalid_request", "n"),
    ("n too large", {"json": {"messages": HI, "n": 1000}}, 400, "invalid_request", "n"),
    ("negative temperature", {"json": {"messages": HI, "temperature": -1}}, 400,
     "invalid_request", "temperature"),
    ("top_p negative", {"json": {"messages": HI, "top_p": -0.5}}, 400, "invalid_request",
     "top_p"),
    ("top_p above one", {"json": {"messages": HI, "top_p": 1.5}}, 400, "invalid_request", "top_p"),
    ("logit_bias key not a token id", {"json": {"messages": HI, "logit_bias": {"abc": 5}}},
     400, "invalid_request", "logit_bias"),
    ("logit_bias outside the vocabulary, streamed",
     {"json": {"messages": HI, "stream": True, "logit_bias": {"10000000": 5}}},
     400, "invalid_request", "logit_bias"),
    ("logit_bias over 100", {"json": {"messages": HI, "logit_bias": {"3": 150}}},
     400, "invalid_request", "logit_bias[3]"),
    ("empty stop string", {"json": {"messages": HI, "stop": ["end", ""]}},
     400, "invalid_request", "stop"),
    ("audio output", {"json": {"messages": HI, "modalities": ["text", "audio"],
                               "audio": {"voice": "alloy", "format": "wav"}}},
     400, "unsupported_parameter", "modalities"),
    ("audio settings", {"json": {"messages": HI, "audio": {"voice": "alloy"}}},
     400, "unsupported_parameter", "audio"),
    ("web search", {"json": {"messages": HI, "web_search_options": {}}},
     400, "unsupported_parameter", "web_search_options"),
    ("deprecated functions", {"json": {"messages": HI, "functions": [{"name": "f"}]}},
     400, "unsupported_parameter", "functions"),
    ("context too long", {"json": {"messages": HI, "max_tokens": 4000}}, 400,
     "context_length_exceeded", "max_tokens"),
    ("lone surrogate", {"content": b'{"messages":[{"role":"user","content":"a\\ud800b"}]}',
                        "headers": {"content-type": "application/json"}},
     400, "invalid_encoding", "messages[0].content"),
    ("seed beyond int64 (found by schemathesis)",
     {"json": {"messages": HI, "seed": 18446744073709559808}}, 400, "invalid_request", "seed"),
    ("unknown model", {"json": {"model": "gpt-4o", "messages": HI}}, 404, "model_not_found",
     "model"),
    ("oversized body", {"content": b'{"messages":[{"role":"user","content":"'
                        + b"x" * (9 * 1024 * 1024) + b'"}]}',
                        "headers": {"content-type": "application/json"}},
     413, "request_too_large", None),
    # a generator body goes chunked: no Content-Length, the limit is met as it streams in
    ("oversized chunked body", {"content": oversized_chunks(),
                                "headers": {"content-type": "application/json"}},
     413, "request_too_large", None),
    ("body not UTF-8", {"content": b'{"messages":[{"role":"user","content":"caf\xe9"}]}',
                        "headers": {"content-type": "application/json"}},
     400, "invalid_encoding", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "status", "code", "param"),
    [pytest.param(k, s, c, p, id=name) for name, k, s, c, p in CASES],
)
def test_bad_input(
    gateway: LiveGateway, kwargs: dict[str, Any], status: int, code: str, param: str | None
) -> None:
    r = httpx.post(gateway.v1 + "/chat/completions", timeout=60, **kwargs)
    assert r.status_code == status, r.text
    body = r.json()
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in r.text
    if param is not None:
        assert error["param"] == param
    if load_openapi() is not None:
        validate_schema("ErrorResponse", body)


def test_nan_is_refused_as_not_finite(gateway: LiveGateway) -> None:
    """JSON's `NaN` parses; the error says it is not finite, not that it misses a bound."""
    r = httpx.post(
        gateway.v1 + "/chat/completions",
        content=b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert (error["param"], error["code"]) == ("temperature", "invalid_request")
    assert error["message"] == "Invalid request: temperature: Input should be a finite number"


def test_context_length_message_names_both_numbers(gateway: LiveGateway) -> None:
    r = httpx.post(gateway.v1 + "/chat/completions", json={"messages": HI, "max_tokens": 4000})
    message = r.json()["error"]["message"]
    assert "2048" in message and "4000" in message


@pytest.mark.parametrize("path", ["/v1/nothing", "/v2/chat/completions"])
def test_unknown_route_is_404(gateway: LiveGateway, path: str) -> None:
    r = httpx.get(gateway.base_url + path)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_responses_api_404_says_what_to_use(gateway: LiveGateway) -> None:
    """The OpenAI SDK's `client.responses.create` gets an OpenAI error that names the
    chat endpoint instead of a bare 404."""
    client = openai.OpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model=gateway.model, input="hi")
    assert caught.value.code == "not_found"
    assert "/v1/chat/completions" in caught.value.message


def test_request_id_is_kept_and_echoed(gateway: LiveGateway) -> None:
    r = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"messages": HI, "max_tokens": 2},
        headers={"X-Request-Id": "trace-abc-123"},
        timeout=60,
    )
    assert r.headers["x-request-id"] == "trace-abc-123"
    assert r.json()["id"].startswith("chatcmpl-trace-abc-123-")
    fresh = httpx.get(gateway.base_url + "/health").headers["x-request-id"]
    assert len(fresh) == 32
