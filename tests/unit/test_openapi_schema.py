"""Tests for tests/openapi_schema.py: the validator must both pass and fail.

Tests marked ``requires_openapi`` use OpenAI's real document (skipped when it is
absent); the converter tests and the synthetic-document tests always run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.openapi_schema import (
    ENV_VAR,
    convert_schema,
    converted_root,
    load_openapi,
    openapi_path,
    requires_openapi,
    validate_schema,
)

Body = dict[str, Any]

# --------------------------------------------------------------------------- #
# Realistic bodies (fresh copies each call, so tests may mutate them).
# --------------------------------------------------------------------------- #


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


# --------------------------------------------------------------------------- #
# Mutation helper: set / delete a value at a path of keys and indexes.
# --------------------------------------------------------------------------- #

_DELETE = object()


def mutated(body: Body, path: tuple[str | int, ...], value: object) -> Body:
    out = copy.deepcopy(body)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


def _assert_invalid(name: str, body: object, *fragments: str) -> str:
    with pytest.raises(AssertionError) as info:
        validate_schema(name, body)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    return message


# --------------------------------------------------------------------------- #
# Against the real document
# --------------------------------------------------------------------------- #

VALID: list[tuple[str, Callable[[], Body]]] = [
    ("CreateChatCompletionResponse", chat_completion),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools),
    ("CreateChatCompletionStreamResponse", chunk_role),
    ("CreateChatCompletionStreamResponse", chunk_content),
    ("CreateChatCompletionStreamResponse", chunk_finish),
    ("CreateChatCompletionStreamResponse", chunk_usage),
    ("ListModelsResponse", models_list),
    ("ErrorResponse", error_body),
    ("CreateCompletionResponse", completion),
    ("CreateCompletionResponse", completion_with_logprobs),
]


@requires_openapi
@pytest.mark.parametrize(("name", "make"), VALID, ids=[m.__name__ for _, m in VALID])
def test_valid_bodies(name: str, make: Callable[[], Body]) -> None:
    validate_schema(name, make())


CHOICE0 = ("choices", 0)

# (schema, body factory, path, new value or _DELETE, fragment expected in message)
# fmt: off
INVALID: list[tuple[str, Callable[[], Body], tuple[str | int, ...], object, str]] = [
    # --- CreateChatCompletionResponse
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "finish_reason"), "bogus",
     "$.choices[0].finish_reason: 'bogus' is not one of"),
    ("CreateChatCompletionResponse", chat_completion, ("id",), _DELETE,
     "'id' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, ("object",), "chat.completion.chunk",
     "$.object: 'chat.completion.chunk' is not one of ['chat.completion']"),
    ("CreateChatCompletionResponse", chat_completion, ("created",), 1741570283.5,
     "$.created: 1741570283.5 is not of type 'integer'"),
    ("CreateChatCompletionResponse", chat_completion, ("service_tier",), "bogus",
     "anyOf branch 0: $.service_tier: 'bogus' is not one of ['auto', 'default', 'flex', "
     "'scale', 'priority', 'fast']"),
    ("CreateChatCompletionResponse", chat_completion, ("system_fingerprint",), None,
     "$.system_fingerprint: None is not of type 'string'"),
    ("CreateChatCompletionResponse", chat_completion, ("usage",), None,
     "$.usage: None is not of type 'object'"),
    ("CreateChatCompletionResponse", chat_completion, ("usage", "total_tokens"), _DELETE,
     "$.usage: 'total_tokens' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, ("usage", "prompt_tokens_details"), None,
     "$.usage.prompt_tokens_details: None is not of type 'object'"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "finish_reason"), None,
     "$.choices[0].finish_reason: None is not of type 'string'"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "logprobs"), _DELETE,
     "$.choices[0]: 'logprobs' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "refusal"), _DELETE,
     "$.choices[0].message: 'refusal' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "content"), _DELETE,
     "$.choices[0].message: 'content' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "role"), "user",
     "$.choices[0].message.role: 'user' is not one of ['assistant']"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "function_call"),
     None, "$.choices[0].message.function_call: None is not of type 'object'"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "tool_calls"), None,
     "$.choices[0].message.tool_calls: None is not of type 'array'"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "annotations"),
     None, "$.choices[0].message.annotations: None is not of type 'array'"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "logprobs", "refusal"), _DELETE,
     "anyOf branch 0: $.choices[0].logprobs: 'refusal' is a required property"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "logprobs", "content", 0, "top_logprobs"), _DELETE,
     "anyOf branch 0: $.choices[0].logprobs.content[0]: 'top_logprobs' is a required property"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "logprobs", "content", 0, "top_logprobs", 1, "bytes"), _DELETE,
     "anyOf branch 0: $.choices[0].logprobs.content[0].top_logprobs[1]: 'bytes' is a required "
     "property"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "message", "tool_calls", 0, "id"), _DELETE,
     "oneOf branch 0: $.choices[0].message.tool_calls[0]: 'id' is a required property"),
    # --- CreateChatCompletionStreamResponse
    ("CreateChatCompletionStreamResponse", chunk_content, ("object",), "chat.completion",
     "$.object: 'chat.completion' is not one of ['chat.completion.chunk']"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "finish_reason"), "bogus",
     "$.choices[0].finish_reason: 'bogus' is not one of"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "finish_reason"), _DELETE,
     "$.choices[0]: 'finish_reason' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "delta"), _DELETE,
     "$.choices[0]: 'delta' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "logprobs", "refusal"),
     _DELETE, "$.choices[0].logprobs: 'refusal' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_role, (*CHOICE0, "delta", "role"), "bot",
     "$.choices[0].delta.role: 'bot' is not one of"),
    ("CreateChatCompletionStreamResponse", chunk_role, (*CHOICE0, "delta", "tool_calls"),
     [{"id": "call_0", "type": "function", "function": {"name": "f"}}],
     "$.choices[0].delta.tool_calls[0]: 'index' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_usage, ("choices",), _DELETE,
     "'choices' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_usage, ("usage", "prompt_tokens"), "12",
     "anyOf branch 0: $.usage.prompt_tokens: '12' is not of type 'integer'"),
    ("CreateChatCompletionStreamResponse", chunk_usage, ("system_fingerprint",), None,
     "$.system_fingerprint: None is not of type 'string'"),
    # --- ListModelsResponse / Model
    ("ListModelsResponse", models_list, ("object",), "models",
     "$.object: 'models' is not one of ['list']"),
    ("ListModelsResponse", models_list, ("data", 0, "owned_by"), _DELETE,
     "$.data[0]: 'owned_by' is a required property"),
    ("ListModelsResponse", models_list, ("data", 0, "created"), _DELETE,
     "$.data[0]: 'created' is a required property"),
    ("ListModelsResponse", models_list, ("data", 0, "object"), "engine",
     "$.data[0].object: 'engine' is not one of ['model']"),
    ("ListModelsResponse", models_list, ("data",), None, "$.data: None is not of type 'array'"),
    # --- ErrorResponse
    ("ErrorResponse", error_body, ("error", "code"), 404,
     "anyOf branch 0: $.error.code: 404 is not of type 'string'"),
    ("ErrorResponse", error_body, ("error", "param"), _DELETE,
     "$.error: 'param' is a required property"),
    ("ErrorResponse", error_body, ("error", "code"), _DELETE,
     "$.error: 'code' is a required property"),
    ("ErrorResponse", error_body, ("error", "type"), None,
     "$.error.type: None is not of type 'string'"),
    ("ErrorResponse", lambda: {"detail": "Not Found"}, (), None,
     "$: 'error' is a required property"),
    # --- CreateCompletionResponse
    ("CreateCompletionResponse", completion, (*CHOICE0, "finish_reason"), "tool_calls",
     "$.choices[0].finish_reason: 'tool_calls' is not one of ['stop', 'length', "
     "'content_filter']"),
    ("CreateCompletionResponse", completion, ("object",), "chat.completion",
     "$.object: 'chat.completion' is not one of ['text_completion']"),
    ("CreateCompletionResponse", completion, (*CHOICE0, "logprobs"), _DELETE,
     "$.choices[0]: 'logprobs' is a required property"),
    ("CreateCompletionResponse", completion, (*CHOICE0, "text"), None,
     "$.choices[0].text: None is not of type 'string'"),
    ("CreateCompletionResponse", completion_with_logprobs,
     (*CHOICE0, "logprobs", "token_logprobs", 0), None,
     "anyOf branch 0: $.choices[0].logprobs.token_logprobs[0]: None is not of type 'number'"),
    ("CreateCompletionResponse", completion_with_logprobs,
     (*CHOICE0, "logprobs", "top_logprobs", 0), None,
     "anyOf branch 0: $.choices[0].logprobs.top_logprobs[0]: None is not of type 'object'"),
]
# fmt: on


def _invalid_id(case: tuple[str, Callable[[], Body], tuple[str | int, ...], object, str]) -> str:
    name, _make, path, value, _expected = case
    what = "del" if value is _DELETE else f"={value!r}"
    return f"{name}-{'.'.join(map(str, path)) or '<root>'}{what}"


@requires_openapi
@pytest.mark.parametrize("case", INVALID, ids=[_invalid_id(c) for c in INVALID])
def test_invalid_bodies(
    case: tuple[str, Callable[[], Body], tuple[str | int, ...], object, str],
) -> None:
    name, make, path, value, fragment = case
    body = make() if not path else mutated(make(), path, value)
    _assert_invalid(name, body, fragment)


NULLABLE_OK: list[tuple[str, Callable[[], Body], tuple[str | int, ...]]] = [
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "content")),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "refusal")),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "audio")),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "logprobs")),
    ("CreateChatCompletionResponse", chat_completion, ("service_tier",)),
    ("CreateChatCompletionResponse", chat_completion, ("metadata",)),
    ("CreateChatCompletionResponse", chat_completion, ("moderation",)),
    (
        "CreateChatCompletionResponse",
        chat_completion_with_logprobs_and_tools,
        (*CHOICE0, "logprobs", "content"),
    ),
    (
        "CreateChatCompletionResponse",
        chat_completion_with_logprobs_and_tools,
        (*CHOICE0, "logprobs", "content", 0, "bytes"),
    ),
    # OpenAPI 3.0 `nullable: true` spots (only correct if the conversion works):
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "finish_reason")),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "logprobs")),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "logprobs", "content")),
    ("CreateChatCompletionStreamResponse", chunk_content, ("usage",)),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "delta", "content")),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "delta", "refusal")),
    ("ListModelsResponse", models_list, ("data", 0, "shutdown_date")),
    ("ErrorResponse", error_body, ("error", "code")),
    ("ErrorResponse", error_body, ("error", "param")),
    ("CreateCompletionResponse", completion_with_logprobs, (*CHOICE0, "logprobs")),
]


@requires_openapi
@pytest.mark.parametrize(
    ("name", "make", "path"),
    NULLABLE_OK,
    ids=[f"{n}-{'.'.join(map(str, p))}" for n, _, p in NULLABLE_OK],
)
def test_null_accepted_where_nullable(
    name: str, make: Callable[[], Body], path: tuple[str | int, ...]
) -> None:
    validate_schema(name, mutated(make(), path, None))


OPTIONAL_OK: list[tuple[str, Callable[[], Body], tuple[str | int, ...]]] = [
    ("CreateChatCompletionResponse", chat_completion, ("usage",)),
    ("CreateChatCompletionResponse", chat_completion, ("service_tier",)),
    ("CreateChatCompletionResponse", chat_completion, ("system_fingerprint",)),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "logprobs")),
    ("CreateChatCompletionStreamResponse", chunk_content, ("usage",)),
    ("CreateCompletionResponse", completion, ("usage",)),
]


@requires_openapi
@pytest.mark.parametrize(
    ("name", "make", "path"),
    OPTIONAL_OK,
    ids=[f"{n}-{'.'.join(map(str, p))}" for n, _, p in OPTIONAL_OK],
)
def test_optional_fields_may_be_absent(
    name: str, make: Callable[[], Body], path: tuple[str | int, ...]
) -> None:
    validate_schema(name, mutated(make(), path, _DELETE))


@requires_openapi
def test_all_errors_are_listed_with_paths() -> None:
    body = chat_completion()
    del body["id"]
    body["choices"][0]["finish_reason"] = "bogus"
    body["choices"][0]["message"]["role"] = "user"
    message = _assert_invalid(
        "CreateChatCompletionResponse",
        body,
        "(3 error(s))",
        "$: 'id' is a required property",
        "$.choices[0].finish_reason: 'bogus' is not one of",
        "$.choices[0].message.role: 'user' is not one of",
    )
    assert message.startswith(
        "body does not validate against components/schemas/CreateChatCompletionResponse"
    )


@requires_openapi
def test_anyof_errors_show_the_failing_branch() -> None:
    body = completion_with_logprobs()
    body["choices"][0]["logprobs"]["token_logprobs"] = [None]
    _assert_invalid(
        "CreateCompletionResponse",
        body,
        "anyOf branch 0: $.choices[0].logprobs.token_logprobs[0]: None is not of type 'number'",
    )


@requires_openapi
def test_unknown_schema_name() -> None:
    with pytest.raises(KeyError, match="NoSuchSchema"):
        validate_schema("NoSuchSchema", {})


@requires_openapi
def test_document_own_examples_validate() -> None:
    doc = load_openapi()
    assert doc is not None
    schemas = doc["components"]["schemas"]
    for name in ("CreateChatCompletionResponse", "Model", "CreateCompletionResponse"):
        validate_schema(name, json.loads(schemas[name]["x-oaiMeta"]["example"]))
    stream_example = schemas["CreateChatCompletionStreamResponse"]["x-oaiMeta"]["example"]
    chunks = [json.loads(line) for line in stream_example.splitlines() if line.startswith("{")]
    assert len(chunks) >= 3
    for chunk in chunks:
        validate_schema("CreateChatCompletionStreamResponse", chunk)


@requires_openapi
def test_converted_document_is_valid_2020_12() -> None:
    root = converted_root()
    Draft202012Validator.check_schema(root)
    text = json.dumps(root)
    assert '"nullable"' not in text
    assert '"$ref": "#/components/' not in text
    assert "$recursive" not in text


@requires_openapi
def test_report_facts() -> None:
    """Pin what the server authors were told; fails loudly if the document drifts."""
    doc = load_openapi()
    assert doc is not None
    s = doc["components"]["schemas"]
    chat_choice = s["CreateChatCompletionResponse"]["properties"]["choices"]["items"]
    stream_choice = s["CreateChatCompletionStreamResponse"]["properties"]["choices"]["items"]
    text_choice = s["CreateCompletionResponse"]["properties"]["choices"]["items"]
    top = ["choices", "created", "id", "model", "object"]
    assert sorted(s["CreateChatCompletionResponse"]["required"]) == top
    assert sorted(s["CreateChatCompletionStreamResponse"]["required"]) == top
    assert sorted(s["CreateCompletionResponse"]["required"]) == top
    assert sorted(chat_choice["required"]) == ["finish_reason", "index", "logprobs", "message"]
    assert sorted(stream_choice["required"]) == ["delta", "finish_reason", "index"]
    assert sorted(text_choice["required"]) == ["finish_reason", "index", "logprobs", "text"]
    assert sorted(s["ChatCompletionResponseMessage"]["required"]) == ["content", "refusal", "role"]
    assert sorted(s["ChatCompletionTokenLogprob"]["required"]) == [
        "bytes",
        "logprob",
        "token",
        "top_logprobs",
    ]
    assert sorted(s["CompletionUsage"]["required"]) == [
        "completion_tokens",
        "prompt_tokens",
        "total_tokens",
    ]
    assert sorted(s["Model"]["required"]) == ["created", "id", "object", "owned_by"]
    assert sorted(s["Error"]["required"]) == ["code", "message", "param", "type"]
    for name in (
        "Model",
        "ListModelsResponse",
        "ChatCompletionResponseMessage",
        "CreateChatCompletionResponse",
        "CreateChatCompletionStreamResponse",
        "ChatCompletionStreamResponseDelta",
        "CompletionUsage",
        "Error",
    ):
        assert "additionalProperties" not in s[name], name


# --------------------------------------------------------------------------- #
# Converter and plumbing (no real document needed)
# --------------------------------------------------------------------------- #


def _check(schema: Any, instance: object) -> bool:
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", **convert_schema(schema)}
    return bool(Draft202012Validator(root).is_valid(instance))


def test_nullable_on_plain_type() -> None:
    schema = {"type": "string", "nullable": True}
    assert convert_schema(schema) == {"type": ["string", "null"]}
    assert _check(schema, None) and _check(schema, "x") and not _check(schema, 1)
    assert not _check({"type": "string"}, None)


def test_nullable_with_enum_allows_null_but_not_other_values() -> None:
    schema = {"type": "string", "enum": ["stop", "length"], "nullable": True}
    assert _check(schema, None) and _check(schema, "stop")
    assert not _check(schema, "bogus")


def test_nullable_on_ref_and_composites_wraps_in_anyof() -> None:
    for schema in (
        {"$ref": "#/components/schemas/X", "nullable": True},
        {"allOf": [{"type": "integer"}], "nullable": True},
        {"oneOf": [{"type": "integer"}, {"type": "string"}], "nullable": True},
        {"anyOf": [{"type": "integer"}], "nullable": True},
        {"const": "x", "nullable": True},
        {"description": "untyped", "nullable": True},
    ):
        converted = convert_schema(schema)
        assert converted["anyOf"][1] == {"type": "null"}, schema
        assert "nullable" not in converted["anyOf"][0]
    assert convert_schema({"$ref": "#/components/schemas/X", "nullable": True})["anyOf"][0] == {
        "$ref": "#/$defs/X"
    }
    assert _check({"allOf": [{"type": "integer"}], "nullable": True}, None)
    assert not _check({"allOf": [{"type": "integer"}], "nullable": True}, "x")
    assert _check({"const": "x", "nullable": True}, None)


def test_nullable_false_dropped_and_nested_conversion() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "integer", "nullable": False},
            "nullable": {"type": "array", "items": {"type": "number", "nullable": True}},
        },
        "example": {"a": None, "nullable": True},
        "x-oaiMeta": {"nullable": True},
        "discriminator": {"propertyName": "a", "mapping": {"1": "#/components/schemas/Y"}},
    }
    converted = convert_schema(schema)
    assert converted["properties"]["a"] == {"type": "integer"}
    assert converted["properties"]["nullable"]["items"] == {"type": ["number", "null"]}
    # Annotations are copied verbatim, not treated as schemas.
    assert converted["example"] == {"a": None, "nullable": True}
    assert converted["x-oaiMeta"] == {"nullable": True}
    assert converted["discriminator"] == schema["discriminator"]
    assert _check(schema, {"a": 1, "nullable": [1.5, None]})
    assert not _check(schema, {"a": None})
    assert not _check(schema, {"nullable": []})


def test_boolean_exclusive_bounds() -> None:
    schema = {"type": "number", "minimum": 0, "maximum": 2, "exclusiveMinimum": True}
    assert convert_schema(schema) == {"type": "number", "maximum": 2, "exclusiveMinimum": 0}
    assert not _check(schema, 0) and _check(schema, 0.1) and _check(schema, 2)
    schema = {"type": "number", "maximum": 2, "exclusiveMaximum": False}
    assert convert_schema(schema) == {"type": "number", "maximum": 2}


def test_additional_properties_not_tightened() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert "additionalProperties" not in convert_schema(schema)
    assert _check(schema, {"a": "x", "extra": 1})
    strict = {**schema, "additionalProperties": False}
    assert not _check(strict, {"a": "x", "extra": 1})


def test_recursive_ref_points_at_component() -> None:
    schema = {
        "$recursiveAnchor": True,
        "type": "object",
        "properties": {"filters": {"type": "array", "items": {"$recursiveRef": "#"}}},
    }
    converted = convert_schema(schema, "Filter")
    assert "$recursiveAnchor" not in converted
    assert converted["properties"]["filters"]["items"] == {"$ref": "#/$defs/Filter"}


def _write_doc(path: Path) -> None:
    doc = {
        "openapi": "3.1.0",
        "components": {
            "schemas": {
                "Usage": {
                    "type": "object",
                    "required": ["total_tokens"],
                    "properties": {"total_tokens": {"type": "integer"}},
                },
                "Chunk": {
                    "type": "object",
                    "required": ["finish_reason", "usage"],
                    "properties": {
                        "finish_reason": {
                            "type": "string",
                            "enum": ["stop", "length"],
                            "nullable": True,
                        },
                        "usage": {"$ref": "#/components/schemas/Usage", "nullable": True},
                    },
                },
            }
        },
    }
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_env_override_and_synthetic_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc_path = tmp_path / "openapi.json"
    _write_doc(doc_path)
    monkeypatch.setenv(ENV_VAR, str(doc_path))
    assert openapi_path() == doc_path
    doc = load_openapi()
    assert doc is not None and doc["openapi"] == "3.1.0"
    assert load_openapi() is doc  # cached
    validate_schema("Chunk", {"finish_reason": None, "usage": None})
    validate_schema("Chunk", {"finish_reason": "stop", "usage": {"total_tokens": 3}})
    _assert_invalid(
        "Chunk",
        {"finish_reason": "bogus", "usage": {}},
        "(2 error(s))",
        "$.finish_reason: 'bogus' is not one of ['stop', 'length', None]",
        "$.usage: {} is not valid under any of the given schemas",
        "anyOf branch 0: $.usage: 'total_tokens' is a required property",
    )
    _assert_invalid("Chunk", {}, "'finish_reason' is a required property")


def test_missing_document_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope" / "openapi.json"
    monkeypatch.setenv(ENV_VAR, str(missing))
    assert openapi_path() == missing
    assert load_openapi() is None
    with pytest.raises(pytest.skip.Exception, match="OpenAI OpenAPI document not found at"):
        validate_schema("Chunk", {})


def test_default_path_is_next_to_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    repo_root = Path(__file__).resolve().parents[2]
    assert openapi_path() == repo_root.parent / "shared" / "openai-openapi" / "openapi.json"
    mark = requires_openapi.mark
    assert mark.name == "skipif"
    assert mark.kwargs["reason"].startswith("OpenAI OpenAPI document not found at ")
