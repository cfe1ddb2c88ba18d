"""The deprecated function fields, audio output and web search are refused by name;
text-only modalities and nulls pass."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.unsupported import refuse_unsupported
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest

NOW = {"type": "function", "function": {"name": "now"}}


def req(**fields: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "hi"}], **fields}
    )


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"modalities": ["audio"], "audio": {"voice": "alloy"}}, "modalities"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"web_search_options": {}}, "web_search_options"),
    ],
)
def test_refused_with_the_field_named(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(GatewayError) as err:
        refuse_unsupported(req(**fields))
    assert (err.value.param, err.value.code) == (param, "unsupported_parameter")
    assert err.value.status == 400
    if param == "modalities":  # the value as the client sent it, in JSON
        assert '["text", "audio"]' in err.value.message or '["audio"]' in err.value.message


@pytest.mark.parametrize(
    "fields",
    [{}, {"modalities": ["text"]}, {"modalities": None, "audio": None, "web_search_options": None}],
)
def test_text_only_requests_pass(fields: dict[str, Any]) -> None:
    refuse_unsupported(req(**fields))


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"functions": [{"name": "now", "parameters": {"type": "object"}}]}, "functions"),
        ({"function_call": "auto"}, "function_call"),
        ({"tools": [NOW], "function_call": {"name": "now"}}, "function_call"),
    ],
)
def test_deprecated_functions_are_refused_not_dropped(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(GatewayError) as info:
        refuse_unsupported(req(**fields))
    assert (info.value.status, info.value.param) == (400, param)
    modern = {"functions": "send tools", "function_call": "send tool_choice"}[param]
    assert info.value.code == "unsupported_parameter" and modern in info.value.message
