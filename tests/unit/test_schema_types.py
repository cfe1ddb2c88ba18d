"""A type name JSON Schema lacks is found where it is, and a forced tool call refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.tools import plan_tools
from app.errors import GatewayError
from app.schema_types import unknown_type
from app.schemas.chat import ChatCompletionRequest


@pytest.mark.parametrize(
    ("schema", "found"),
    [
        (
            {"type": "object", "properties": {"city": {"type": "str"}}},
            (".properties.city.type", "str"),
        ),
        ({"type": ["string", "int"]}, (".type", ["string", "int"])),
        ({"type": []}, (".type", [])),
        ({"type": "array", "items": {"type": "float"}}, (".items.type", "float")),
        ({"anyOf": [{"type": "null"}, {"type": "dict"}]}, (".anyOf[1].type", "dict")),
        ({"$defs": {"P": {"type": "bool"}}, "$ref": "#/$defs/P"}, (".$defs.P.type", "bool")),
        (
            {"type": "object", "additionalProperties": {"type": 5}},
            (".additionalProperties.type", 5),
        ),
        # a property called "type" is a name, not the keyword
        ({"type": "object", "properties": {"type": {"type": "string"}}}, None),
        ({"type": ["integer", "null"], "items": [{"type": "number"}]}, None),
        ({}, None),
        (None, None),
    ],
)
def test_unknown_type_names_the_place(schema: Any, found: tuple[str, Any] | None) -> None:
    assert unknown_type(schema) == found


def tools_request(tool_choice: Any) -> ChatCompletionRequest:
    good = {"type": "object", "properties": {"n": {"type": "integer"}}}
    bad = {"type": "object", "properties": {"city": {"type": "str"}}}
    tools = [
        {"type": "function", "function": {"name": "ok", "parameters": good}},
        {"type": "function", "function": {"name": "weather", "parameters": bad}},
    ]
    messages = [{"role": "user", "content": "hi"}]
    return ChatCompletionRequest.model_validate(
        {"messages": messages, "tools": tools, "tool_choice": tool_choice}
    )


@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "weather"}}]
)
def test_a_forced_call_refuses_a_type_json_schema_lacks(tool_choice: Any) -> None:
    with pytest.raises(GatewayError) as caught:
        plan_tools(tools_request(tool_choice))
    assert caught.value.param == "tools[1].function.parameters"
    assert "tools[1].function.parameters.properties.city.type is 'str'" in caught.value.message


@pytest.mark.parametrize(
    "tool_choice", ["auto", "none", {"type": "function", "function": {"name": "ok"}}]
)
def test_no_grammar_from_that_tool_no_refusal(tool_choice: Any) -> None:
    plan = plan_tools(tools_request(tool_choice))  # the schema reaches the template, if at all
    assert (plan.constraint is not None) == isinstance(tool_choice, dict)
