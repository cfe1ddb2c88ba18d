"""app.structured and app.chat.tools: which constraint a request gets, and the thinking rule."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.normalize import Defaults, normalize
from app.chat.tools import MAX_PARALLEL_CALLS, forces_tool_call, plan_tools
from app.errors import GatewayError
from app.grammar import json_object_grammar
from app.schemas.chat import ChatCompletionRequest
from app.structured import json_constraint, requested_constraint, wants_constraint

HELLO = [{"role": "user", "content": "hi"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "now", "description": None}},
]


def chat(**fields: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"messages": HELLO, **fields})


def test_no_constraint() -> None:
    request = chat(response_format={"type": "text"})
    assert requested_constraint(request) is None
    assert not wants_constraint(request)


def test_json_schema_becomes_the_compact_grammar() -> None:
    request = chat(
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}
    )
    constraint = requested_constraint(request)
    assert constraint is not None
    assert (constraint.kind, constraint.param) == ("grammar", "response_format")
    assert '"\\"a\\""' in constraint.value
    assert wants_constraint(request)


def test_unsupported_schema_goes_to_vllm_json() -> None:
    schema = {"type": "string", "pattern": "^a+$"}
    constraint = json_constraint(schema, "guided_json")
    assert (constraint.kind, constraint.value) == ("json", schema)


def test_json_object() -> None:
    constraint = requested_constraint(chat(response_format={"type": "json_object"}))
    assert constraint is not None and constraint.value == json_object_grammar()


@pytest.mark.parametrize(
    ("fields", "kind", "value"),
    [
        ({"guided_regex": "(yes|no)"}, "regex", "(yes|no)"),
        ({"guided_choice": ["a", "b"]}, "choice", ["a", "b"]),
        ({"guided_grammar": 'root ::= "x"'}, "grammar", 'root ::= "x"'),
        ({"guided_json": '{"type": "string", "pattern": "x"}'}, "json", None),
        ({"structured_outputs": {"regex": "[0-9]+"}}, "regex", "[0-9]+"),
        (
            {"structured_outputs": {"choice": ["x"], "disable_any_whitespace": True}},
            "choice",
            ["x"],
        ),
        ({"structured_outputs": {"json_object": True}}, "grammar", json_object_grammar()),
        (
            {"structured_outputs": {"structural_tag": {"type": "x"}}},
            "structural_tag",
            '{"type": "x"}',
        ),
    ],
)
def test_vllm_extras(fields: dict[str, Any], kind: str, value: Any) -> None:
    constraint = requested_constraint(chat(**fields))
    assert constraint is not None and constraint.kind == kind
    if value is not None:
        assert constraint.value == value


def test_response_format_wins_over_extras() -> None:
    request = chat(response_format={"type": "json_object"}, guided_regex="x")
    constraint = requested_constraint(request)
    assert constraint is not None and constraint.param == "response_format"


@pytest.mark.parametrize(
    "fields",
    [
        {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
        {"structured_outputs": {"regex": "a", "choice": ["a"]}},
        {"structured_outputs": {"disable_any_whitespace": True}},
        {"structured_outputs": {"json_object": False}},
        {"guided_choice": []},
        {"guided_json": "{not json"},
        {"guided_grammar": "  "},
    ],
)
def test_malformed_constraints_are_400(fields: dict[str, Any]) -> None:
    with pytest.raises(GatewayError) as info:
        requested_constraint(chat(**fields))
    assert info.value.status == 400


def test_tools_auto_offers_and_parses() -> None:
    plan = plan_tools(chat(tools=TOOLS))
    assert plan.parse and plan.constraint is None
    assert plan.template_tools == [
        {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}},
        {"type": "function", "function": {"name": "now"}},  # nulls left out
    ]


def test_tool_choice_none_offers_nothing() -> None:
    plan = plan_tools(chat(tools=TOOLS, tool_choice="none"))
    assert plan.template_tools is None and not plan.parse


def test_required_constrains_to_the_tools() -> None:
    plan = plan_tools(chat(tools=TOOLS, tool_choice="required"))
    assert plan.constraint is not None and plan.constraint.kind == "grammar"
    grammar = plan.constraint.value
    assert "get_weather" in grammar and "now" in grammar
    assert f"{{0,{MAX_PARALLEL_CALLS - 1}}}" in grammar
    single = plan_tools(chat(tools=TOOLS, tool_choice="required", parallel_tool_calls=False))
    assert single.constraint is not None and "{0," not in single.constraint.value.split("\n")[0]


def test_named_function() -> None:
    choice = {"type": "function", "function": {"name": "now"}}
    plan = plan_tools(chat(tools=TOOLS, tool_choice=choice))
    assert plan.constraint is not None
    assert "now" in plan.constraint.value and "get_weather" not in plan.constraint.value


@pytest.mark.parametrize(
    "fields",
    [
        {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "missing"}}},
        {"tool_choice": "required"},
        {"tool_choice": {"type": "function", "function": {"name": "now"}}},
    ],
)
def test_unsatisfiable_tool_choice_is_400(fields: dict[str, Any]) -> None:
    with pytest.raises(GatewayError) as info:
        plan_tools(chat(**fields))
    assert info.value.param == "tool_choice"


def test_forces_tool_call() -> None:
    assert forces_tool_call(chat(tools=TOOLS, tool_choice="required"))
    assert not forces_tool_call(chat(tools=TOOLS))
    assert not forces_tool_call(chat(tool_choice="required"))


@pytest.mark.parametrize(
    ("fields", "thinking", "fired"),
    [
        ({"response_format": {"type": "json_object"}}, False, True),
        ({"tools": TOOLS, "tool_choice": "required"}, False, True),
        ({"tools": TOOLS}, True, False),  # auto: thinks as usual
        ({"response_format": {"type": "json_object"}, "enable_thinking": True}, True, False),
        ({"guided_regex": "x", "chat_template_kwargs": {"enable_thinking": True}}, True, False),
    ],
)
def test_constrained_answers_skip_thinking_unless_asked(
    fields: dict[str, Any], thinking: bool, fired: bool
) -> None:
    normalized = normalize(chat(**fields), Defaults(enable_thinking=True))
    assert normalized.thinking is thinking
    assert normalized.template_kwargs.get("enable_thinking", True) is thinking
    assert ("constrained_thinking" in normalized.fired) is fired
