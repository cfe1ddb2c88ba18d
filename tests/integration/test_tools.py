"""Tool calling through the real engine: openai SDK, LangChain, raw SSE, OpenAI's schemas."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from tests.integration.conftest import LiveGateway
from tests.openapi_schema import validate_schema

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


@pytest.fixture(scope="module")
def client(gateway: LiveGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0, timeout=120)


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


def test_required_produces_valid_calls(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(
        model=gateway.model, messages=ASK, tools=TOOLS, tool_choice="required", **GREEDY
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls
    for call in choice.message.tool_calls:
        check_call(call)
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


# A grammar (vLLM's extra) that makes any model write two calls, to test parsing end to end.
TWO_CALLS = (
    'root ::= "<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": '
    '{\\"city\\": \\"Paris\\", \\"unit\\": \\"celsius\\"}}\\n</tool_call>\\n'
    '<tool_call>\\n{\\"name\\": \\"now\\", \\"arguments\\": {}}\\n</tool_call>"'
)


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


def sse(gateway: LiveGateway, payload: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", gateway.v1 + "/chat/completions", json=payload, timeout=120) as r:
        assert r.status_code == 200
        frames = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    return [json.loads(f) for f in frames[:-1]]


def test_streamed_calls_arrive_as_openai_deltas(gateway: LiveGateway) -> None:
    chunks = sse(
        gateway,
        {
            "model": gateway.model,
            "messages": ASK,
            "tools": TOOLS,
            "stream": True,
            "structured_outputs": {"grammar": TWO_CALLS},
            **GREEDY,
        },
    )
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        validate_schema("CreateChatCompletionStreamResponse", chunk)
        for delta in chunk["choices"][0]["delta"].get("tool_calls", []):
            index = delta["index"]
            if index not in calls:  # the first delta of a call: id, type, name
                assert delta["id"].startswith("call_") and delta["type"] == "function"
                calls[index] = {"name": delta["function"]["name"], "arguments": ""}
            else:
                assert "id" not in delta and "name" not in delta["function"]
            calls[index]["arguments"] += delta["function"].get("arguments", "")
    assert [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("now", {}),
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_streaming_with_the_sdk_matches_the_whole_answer(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    args: dict[str, Any] = {
        "model": gateway.model,
        "messages": ASK,
        "tools": TOOLS,
        "tool_choice": "required",
        **GREEDY,
    }
    whole = client.chat.completions.create(**args).choices[0].message.tool_calls
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    finish = None
    for chunk in client.chat.completions.create(**args, stream=True):
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for delta in choice.delta.tool_calls or []:
            if delta.function and delta.function.name:
                names[delta.index] = delta.function.name
            if delta.function and delta.function.arguments:
                arguments[delta.index] = arguments.get(delta.index, "") + delta.function.arguments
    assert whole is not None
    assert [(names[i], arguments.get(i, "")) for i in sorted(names)] == [
        (c.function.name, c.function.arguments) for c in whole
    ]
    assert finish == "tool_calls"


def test_reasoning_and_tool_calls_in_one_stream(gateway: LiveGateway) -> None:
    chunks = sse(
        gateway,
        {
            "model": gateway.model,
            "messages": ASK,
            "tools": TOOLS,
            "tool_choice": "required",
            "stream": True,
            "enable_thinking": True,
            "max_reasoning_tokens": 8,
            "temperature": 0,
            "max_tokens": 1000,
        },
    )
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    reasoning = [d for d in deltas if "reasoning_content" in d]
    calls = [d for d in deltas if "tool_calls" in d]
    assert reasoning and calls
    assert deltas.index(reasoning[0]) < deltas.index(calls[0])
    arguments: dict[int, str] = {}
    for d in calls:
        for t in d["tool_calls"]:
            arguments[t["index"]] = arguments.get(t["index"], "") + t["function"]["arguments"]
    assert all(isinstance(json.loads(a), dict) for a in arguments.values())
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_reasoning_and_tool_calls_in_one_answer(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=ASK,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        temperature=0,
        max_tokens=1000,
        extra_body={"enable_thinking": True, "max_reasoning_tokens": 8},
    )
    message = resp.choices[0].message
    assert message.model_extra is not None and "reasoning_content" in message.model_extra
    assert message.tool_calls and check_call(message.tool_calls[0], ("get_weather",))


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


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        ({"tool_choice": "required"}, "tool_choice"),
        (
            {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice",
        ),
        ({"tools": [{"type": "function", "function": {}}]}, None),
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


class WeatherArgs(BaseModel):
    city: str = Field(max_length=12)  # bounded, so any model's string ends


@tool(args_schema=WeatherArgs)
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return "sunny"


@pytest.fixture(scope="module")
def chat_model(gateway: LiveGateway) -> ChatOpenAI:
    return ChatOpenAI(
        model=gateway.model,
        base_url=gateway.v1,
        api_key="EMPTY",
        temperature=0,
        max_tokens=1000,
        max_retries=0,
    )


def test_langchain_bind_tools(chat_model: ChatOpenAI) -> None:
    bound = chat_model.bind_tools([get_weather], tool_choice="any")
    message = bound.invoke("What's the weather in Paris?")
    assert message.tool_calls and message.tool_calls[0]["name"] == "get_weather"
    assert isinstance(message.tool_calls[0]["args"].get("city"), str)
    assert message.response_metadata["finish_reason"] == "tool_calls"


def test_langchain_streams_tool_calls(chat_model: ChatOpenAI) -> None:
    bound = chat_model.bind_tools([get_weather], tool_choice="get_weather")
    merged: AIMessageChunk | None = None
    for chunk in bound.stream("What's the weather in Paris?"):
        assert isinstance(chunk, AIMessageChunk)
        merged = chunk if merged is None else merged + chunk
    assert merged is not None and merged.tool_calls
    call = merged.tool_calls[0]
    assert call["name"] == "get_weather" and isinstance(call["args"].get("city"), str)
    assert call["id"] and call["id"].startswith("call_")
