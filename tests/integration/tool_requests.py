"""Tools and checks shared by the tool-calling integration tests."""

from __future__ import annotations

import json
from typing import Any

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 12},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
CLOCK = {"type": "function", "function": {"name": "now", "description": "The time."}}
TOOLS: list[Any] = [WEATHER, CLOCK]
ASK = [{"role": "user", "content": "What's the weather in Paris?"}]
# `required` allows up to 8 calls: room for all of them, whatever the model prefers.
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 1000}


# A grammar (vLLM's extra) that makes any model write two calls, to test parsing end to end.
TWO_CALLS = (
    'root ::= "<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": '
    '{\\"city\\": \\"Paris\\", \\"unit\\": \\"celsius\\"}}\\n</tool_call>\\n'
    '<tool_call>\\n{\\"name\\": \\"now\\", \\"arguments\\": {}}\\n</tool_call>"'
)


def allowed(mode: str, *names: str) -> dict[str, Any]:
    """OpenAI's `allowed_tools` tool_choice for the named functions."""
    refs = [{"type": "function", "function": {"name": name}} for name in names]
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": refs}}


def check_call(call: Any, names: tuple[str, ...] = ("get_weather", "now")) -> dict[str, Any]:
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name in names
    arguments: dict[str, Any] = json.loads(call.function.arguments)
    if call.function.name == "get_weather":
        assert set(arguments) == {"city", "unit"}
        assert len(arguments["city"]) <= 12 and arguments["unit"] in ("celsius", "fahrenheit")
    else:
        assert arguments == {}
    return arguments


# Keywords the tool-call grammar once gave up on (the whole schema became "any object").
DATED = {
    "type": "function",
    "function": {
        "name": "book",
        "parameters": {
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "seats": {"type": "integer", "minimum": 1, "maximum": 5},
                "note": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
            },
            "required": ["day", "seats"],
        },
    },
}
ONE_INT = {
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
        },
    },
}
