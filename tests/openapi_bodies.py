"""OpenAI-shaped response bodies for the schema validator's tests, and helpers.

Each factory returns a fresh body (tests may mutate it); `mutated` sets or deletes
(`DELETE`) the value at a path of keys and indexes; `assert_invalid` expects the
validator to refuse a body with every given fragment in its message.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.openapi_schema import validate_schema

Body = dict[str, Any]
CHOICE0 = ("choices", 0)


def chat_completion() -> Body:
    return {
        "id": "chatcmpl-3f9a2c",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello!", "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 3,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_vllm",
    }


def token_logprob(token: str, logprob: float) -> Body:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode()),
        "top_logprobs": [
            {"token": token, "logprob": logprob, "bytes": list(token.encode())},
            {"token": "Hi", "logprob": -2.5, "bytes": None},
        ],
    }


def chat_completion_with_logprobs_and_tools() -> Body:
    body = chat_completion()
    choice = body["choices"][0]
    choice["finish_reason"] = "tool_calls"
    choice["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
        "reasoning_content": "user wants weather",  # extension field: allowed
    }
    choice["logprobs"] = {"content": [token_logprob("Hello", -0.01)], "refusal": None}
    choice["stop_reason"] = None  # vLLM extension field: allowed
    return body


def chunk_base() -> Body:
    return {
        "id": "chatcmpl-3f9a2c",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "system_fingerprint": "fp_vllm",
    }


def chunk_role() -> Body:
    return {
        **chunk_base(),
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": ""},
                "logprobs": None,
                "finish_reason": None,
            }
        ],
    }


def chunk_content() -> Body:
    return {
        **chunk_base(),
        "choices": [
            {
                "index": 0,
                "delta": {"content": "Hello"},
                "logprobs": {"content": [token_logprob("Hello", -0.01)], "refusal": None},
                "finish_reason": None,
            }
        ],
        "usage": None,
    }


def chunk_finish() -> Body:
    return {
        **chunk_base(),
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }


def chunk_usage() -> Body:
    return {
        **chunk_base(),
        "choices": [],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


def models_list() -> Body:
    return {
        "object": "list",
        "data": [
            {
                "id": "meta-llama/Llama-3.1-8B-Instruct",
                "object": "model",
                "created": 1741570283,
                "owned_by": "vllm",
                # vLLM extensions: the schema has no additionalProperties limit.
                "root": "meta-llama/Llama-3.1-8B-Instruct",
                "parent": None,
                "max_model_len": 8192,
                "permission": [],
            }
        ],
    }


def error_body() -> Body:
    return {
        "error": {
            "message": "The model `nope` does not exist.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


def completion() -> Body:
    return {
        "id": "cmpl-8d1e",
        "object": "text_completion",
        "created": 1741570283,
        "model": "meta-llama/Llama-3.1-8B",
        "choices": [{"text": " world", "index": 0, "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def completion_with_logprobs() -> Body:
    body = completion()
    body["choices"][0]["logprobs"] = {
        "tokens": [" world"],
        "token_logprobs": [-0.3],
        "top_logprobs": [{" world": -0.3, " there": -1.7}],
        "text_offset": [5],
    }
    return body


DELETE = object()


def mutated(body: Body, path: tuple[str | int, ...], value: object) -> Body:
    out = copy.deepcopy(body)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


def assert_invalid(name: str, body: object, *fragments: str) -> str:
    with pytest.raises(AssertionError) as info:
        validate_schema(name, body)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    return message
