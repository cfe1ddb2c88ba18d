"""Bodies one mutation away from valid must fail OpenAI's schemas, with the error's path
in the message (skipped when OpenAI's document is absent)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.openapi_bodies import (
    CHOICE0,
    DELETE,
    Body,
    assert_invalid,
    chat_completion,
    chat_completion_with_logprobs_and_tools,
    chunk_content,
    chunk_role,
    chunk_usage,
    completion,
    completion_with_logprobs,
    error_body,
    models_list,
    mutated,
)
from tests.openapi_schema import requires_openapi

# (schema, body factory, path, new value or DELETE, fragment expected in message)
# fmt: off
INVALID: list[tuple[str, Callable[[], Body], tuple[str | int, ...], object, str]] = [
    # --- CreateChatCompletionResponse
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "finish_reason"), "bogus",
     "$.choices[0].finish_reason: 'bogus' is not one of"),
    ("CreateChatCompletionResponse", chat_completion, ("id",), DELETE,
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
    ("CreateChatCompletionResponse", chat_completion, ("usage", "total_tokens"), DELETE,
     "$.usage: 'total_tokens' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, ("usage", "prompt_tokens_details"), None,
     "$.usage.prompt_tokens_details: None is not of type 'object'"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "finish_reason"), None,
     "$.choices[0].finish_reason: None is not of type 'string'"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "logprobs"), DELETE,
     "$.choices[0]: 'logprobs' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "refusal"), DELETE,
     "$.choices[0].message: 'refusal' is a required property"),
    ("CreateChatCompletionResponse", chat_completion, (*CHOICE0, "message", "content"), DELETE,
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
     (*CHOICE0, "logprobs", "refusal"), DELETE,
     "anyOf branch 0: $.choices[0].logprobs: 'refusal' is a required property"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "logprobs", "content", 0, "top_logprobs"), DELETE,
     "anyOf branch 0: $.choices[0].logprobs.content[0]: 'top_logprobs' is a required property"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "logprobs", "content", 0, "top_logprobs", 1, "bytes"), DELETE,
     "anyOf branch 0: $.choices[0].logprobs.content[0].top_logprobs[1]: 'bytes' is a required "
     "property"),
    ("CreateChatCompletionResponse", chat_completion_with_logprobs_and_tools,
     (*CHOICE0, "message", "tool_calls", 0, "id"), DELETE,
     "oneOf branch 0: $.choices[0].message.tool_calls[0]: 'id' is a required property"),
    # --- CreateChatCompletionStreamResponse
    ("CreateChatCompletionStreamResponse", chunk_content, ("object",), "chat.completion",
     "$.object: 'chat.completion' is not one of ['chat.completion.chunk']"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "finish_reason"), "bogus",
     "$.choices[0].finish_reason: 'bogus' is not one of"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "finish_reason"), DELETE,
     "$.choices[0]: 'finish_reason' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "delta"), DELETE,
     "$.choices[0]: 'delta' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_content, (*CHOICE0, "logprobs", "refusal"),
     DELETE, "$.choices[0].logprobs: 'refusal' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_role, (*CHOICE0, "delta", "role"), "bot",
     "$.choices[0].delta.role: 'bot' is not one of"),
    ("CreateChatCompletionStreamResponse", chunk_role, (*CHOICE0, "delta", "tool_calls"),
     [{"id": "call_0", "type": "function", "function": {"name": "f"}}],
     "$.choices[0].delta.tool_calls[0]: 'index' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_usage, ("choices",), DELETE,
     "'choices' is a required property"),
    ("CreateChatCompletionStreamResponse", chunk_usage, ("usage", "prompt_tokens"), "12",
     "anyOf branch 0: $.usage.prompt_tokens: '12' is not of type 'integer'"),
    ("CreateChatCompletionStreamResponse", chunk_usage, ("system_fingerprint",), None,
     "$.system_fingerprint: None is not of type 'string'"),
    # --- ListModelsResponse / Model
    ("ListModelsResponse", models_list, ("object",), "models",
     "$.object: 'models' is not one of ['list']"),
    ("ListModelsResponse", models_list, ("data", 0, "owned_by"), DELETE,
     "$.data[0]: 'owned_by' is a required property"),
    ("ListModelsResponse", models_list, ("data", 0, "created"), DELETE,
     "$.data[0]: 'created' is a required property"),
    ("ListModelsResponse", models_list, ("data", 0, "object"), "engine",
     "$.data[0].object: 'engine' is not one of ['model']"),
    ("ListModelsResponse", models_list, ("data",), None, "$.data: None is not of type 'array'"),
    # --- ErrorResponse
    ("ErrorResponse", error_body, ("error", "code"), 404,
     "anyOf branch 0: $.error.code: 404 is not of type 'string'"),
    ("ErrorResponse", error_body, ("error", "param"), DELETE,
     "$.error: 'param' is a required property"),
    ("ErrorResponse", error_body, ("error", "code"), DELETE,
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
    ("CreateCompletionResponse", completion, (*CHOICE0, "logprobs"), DELETE,
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
    what = "del" if value is DELETE else f"={value!r}"
    return f"{name}-{'.'.join(map(str, path)) or '<root>'}{what}"


@requires_openapi
@pytest.mark.parametrize("case", INVALID, ids=[_invalid_id(c) for c in INVALID])
def test_invalid_bodies(
    case: tuple[str, Callable[[], Body], tuple[str | int, ...], object, str],
) -> None:
    name, make, path, value, fragment = case
    body = make() if not path else mutated(make(), path, value)
    assert_invalid(name, body, fragment)
