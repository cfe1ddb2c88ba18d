"""The schema validator (tests/openapi_schema.py) against OpenAI's real document:
realistic bodies pass, nulls pass where the document allows them, optional fields may be
absent, and refusals list every error with its path. Skipped when the document is absent.
Mutated bodies that must fail: test_openapi_invalid.py; the converter: test_openapi_converter.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from jsonschema import Draft202012Validator

from tests.openapi_bodies import (
    CHOICE0,
    DELETE,
    Body,
    assert_invalid,
    chat_completion,
    chat_completion_with_logprobs_and_tools,
    chunk_content,
    chunk_finish,
    chunk_role,
    chunk_usage,
    completion,
    completion_with_logprobs,
    error_body,
    models_list,
    mutated,
)
from tests.openapi_schema import (
    converted_root,
    load_openapi,
    requires_openapi,
    validate_schema,
)

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
    validate_schema(name, mutated(make(), path, DELETE))


@requires_openapi
def test_all_errors_are_listed_with_paths() -> None:
    body = chat_completion()
    del body["id"]
    body["choices"][0]["finish_reason"] = "bogus"
    body["choices"][0]["message"]["role"] = "user"
    message = assert_invalid(
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
    assert_invalid(
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
