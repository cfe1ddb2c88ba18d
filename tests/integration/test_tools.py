"""Tool calling through the real engine with the openai SDK and raw HTTP: tool_choice
modes, several calls, history rendering, bad requests (streaming: test_tools_stream.py)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import httpx
import openai
import pytest

from tests.integration.conftest import LiveGateway
from tests.integration.tool_requests import (
    ASK,
    DATED,
    GREEDY,
    TOOLS,
    TWO_CALLS,
    WEATHER,
    allowed,
    check_call,
)
from tests.openapi_schema import validate_schema


@pytest.mark.parametrize(
    ("tool_choice", "names"),
    [("required", ("get_weather", "now")), (allowed("required", "now"), ("now",))],
)
def test_required_produces_valid_calls(
    client: openai.OpenAI, gateway: LiveGateway, tool_choice: Any, names: tuple[str, ...]
) -> None:
    """`required`, or OpenAI's allowed_tools in required mode: calls of those tools only."""
    resp = client.chat.completions.create(
        model=gateway.model, messages=ASK, tools=TOOLS, tool_choice=tool_choice, **GREEDY
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls
    for call in choice.message.tool_calls:
        check_call(call, names)
    validate_schema("CreateChatCompletionResponse", resp.model_dump(exclude_unset=True))


def test_named_function(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=ASK,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        **GREEDY,
    )
    calls = resp.choices[0].message.tool_calls
    assert calls and len(calls) == 1
    check_call(calls[0], ("get_weather",))
    assert resp.choices[0].finish_reason == "tool_calls"


def test_allowed_tools_auto_offers_only_the_allowed(gateway: LiveGateway) -> None:
    def prompt(payload: dict[str, Any]) -> str:
        body = {"messages": ASK, **payload}
        r = httpx.post(gateway.base_url + "/tokenize", json=body, timeout=30)
        ids = r.json()["tokens"]
        r = httpx.post(gateway.base_url + "/detokenize", json={"tokens": ids}, timeout=30)
        return str(r.json()["prompt"])

    narrowed = prompt({"tools": TOOLS, "tool_choice": allowed("auto", "get_weather")})
    assert narrowed == prompt({"tools": [WEATHER]})
    assert '"name": "get_weather"' in narrowed and '"name": "now"' not in narrowed


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "book"}}])
def test_forced_call_follows_a_schema_with_format_bounds_and_pattern(
    client: openai.OpenAI, gateway: LiveGateway, choice: Any
) -> None:
    """`format`, `maximum` and `pattern` no longer turn the arguments into any object:
    required names, the date's spelling and the integer range hold (the pattern is
    dropped, the string's maxLength kept)."""
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=[{"role": "user", "content": "Book a table."}],
        tools=[DATED],
        tool_choice=choice,
        **GREEDY,
    )
    calls = resp.choices[0].message.tool_calls
    assert calls and resp.choices[0].finish_reason == "tool_calls"
    for call in calls:
        assert call.function.name == "book"
        arguments = json.loads(call.function.arguments)
        assert {"day", "seats"} <= set(arguments) <= {"day", "seats", "note"}
        datetime.date.fromisoformat(arguments["day"])
        assert isinstance(arguments["seats"], int) and 1 <= arguments["seats"] <= 5
        assert len(arguments.get("note", "")) <= 8


def test_single_call_when_parallel_calls_are_off(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=ASK,
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=False,
        temperature=1.0,
        seed=7,
        max_tokens=200,
    )
    calls = resp.choices[0].message.tool_calls
    assert calls and len(calls) == 1


def test_raw_body_validates_and_omits_tool_calls_without_calls(gateway: LiveGateway) -> None:
    base = {"model": gateway.model, "messages": ASK, "max_tokens": 20}
    with_calls = httpx.post(
        gateway.v1 + "/chat/completions",
        json={**base, "tools": TOOLS, "tool_choice": "required", "max_tokens": 1000},
        timeout=120,
    ).json()
    validate_schema("CreateChatCompletionResponse", with_calls)
    message = with_calls["choices"][0]["message"]
    assert message["content"] is None and message["tool_calls"]
    plain = httpx.post(
        gateway.v1 + "/chat/completions",
        json={**base, "tools": TOOLS, "tool_choice": "none"},
        timeout=120,
    ).json()
    validate_schema("CreateChatCompletionResponse", plain)
    assert "tool_calls" not in plain["choices"][0]["message"]


def test_tool_choice_none_does_not_offer_tools(client: openai.OpenAI, gateway: LiveGateway) -> None:
    def prompt_tokens(**extra: Any) -> int:
        resp = client.chat.completions.create(
            model=gateway.model, messages=ASK, max_tokens=1, **extra
        )
        assert resp.usage is not None
        return resp.usage.prompt_tokens

    bare = prompt_tokens()
    assert prompt_tokens(tools=TOOLS, tool_choice="none") == bare
    assert prompt_tokens(tools=TOOLS) > bare  # auto: offered


def test_auto_answers(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(model=gateway.model, messages=ASK, tools=TOOLS, **GREEDY)
    choice = resp.choices[0]
    assert choice.finish_reason in ("stop", "length", "tool_calls")
    for call in choice.message.tool_calls or []:
        assert call.id.startswith("call_") and call.function.name


def test_several_calls_in_one_answer(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=ASK,
        tools=TOOLS,
        extra_body={"structured_outputs": {"grammar": TWO_CALLS}},
        **GREEDY,
    )
    calls = resp.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("now", {}),
    ]
    assert len({c.id for c in calls}) == 2
    assert resp.choices[0].finish_reason == "tool_calls"


def test_history_with_tool_calls_and_results_renders(gateway: LiveGateway) -> None:
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "now", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "22 degrees"},
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
    ]
    ids = httpx.post(
        gateway.base_url + "/tokenize", json={"messages": history, "tools": TOOLS}, timeout=30
    ).json()["tokens"]
    text = httpx.post(gateway.base_url + "/detokenize", json={"tokens": ids}, timeout=30).json()
    prompt = text["prompt"]
    assert (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
        in prompt
    )
    assert '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>' in prompt
    assert "<tool_response>\n22 degrees\n</tool_response>\n<tool_response>\nnoon\n" in prompt
    offered = prompt.split("\n</tools>")[0]  # the system turn's tool list
    assert '{"type": "function", "function": {"name": "get_weather"' in offered
    resp = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"model": gateway.model, "messages": history, "tools": TOOLS, "max_tokens": 10},
        timeout=120,
    )
    assert resp.status_code == 200
    assert resp.json()["usage"]["prompt_tokens"] == len(ids)


STR_TYPED = {
    "type": "function",
    "function": {
        "name": "w",
        "parameters": {"type": "object", "properties": {"city": {"type": "str"}}},
    },
}


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        (
            {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice",
        ),
        ({"tools": [{"type": "function", "function": {}}]}, None),
        (
            {"tools": TOOLS, "tool_choice": allowed("auto", "now", "x")},
            "tool_choice.allowed_tools.tools[1]",
        ),
        ({"tools": TOOLS, "tool_choice": allowed("required")}, None),
        (  # a forced call's arguments would match any value (the grammar is lenient)
            {"tools": [STR_TYPED], "tool_choice": "required", "stream": True},
            "tools[0].function.parameters",
        ),
    ],
)
def test_bad_tool_requests_are_400(
    gateway: LiveGateway, payload: dict[str, Any], param: str | None
) -> None:
    r = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"model": gateway.model, "messages": ASK, **payload},
        timeout=30,
    )
    assert r.status_code == 400
    validate_schema("ErrorResponse", r.json())
    if param is not None:
        assert r.json()["error"]["param"] == param
