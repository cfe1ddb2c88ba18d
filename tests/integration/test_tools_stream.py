"""Tool calls streamed through the real engine: raw SSE deltas against OpenAI's schema,
the openai SDK's accumulated stream against the whole answer, reasoning beside calls, and
LangChain's `ChatOpenAI.bind_tools`."""

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
from tests.integration.tool_requests import (
    ASK,
    GREEDY,
    ONE_INT,
    TOOLS,
    TWO_CALLS,
    check_call,
)
from tests.openapi_schema import validate_schema


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


def test_a_call_cut_by_max_tokens_is_the_same_streamed_and_whole(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    """The same tokens give the same calls and content whole and streamed, wherever
    `max_tokens` cuts the call: before, a whole answer cut inside `</tool_call>` came back
    as raw `<tool_call>` text in `content` while the stream had a parsed call."""
    for max_tokens in (3, 8, 14, 20, 25, 30, 40):
        args: dict[str, Any] = {
            "model": gateway.model,
            "messages": ASK,
            "tools": [ONE_INT],
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "max_tokens": max_tokens,
            "temperature": 0,
            "seed": 2,
        }
        whole = client.chat.completions.create(**args).choices[0]
        content = ""
        calls: dict[int, list[str]] = {}
        finish = None
        for chunk in client.chat.completions.create(**args, stream=True):
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            content += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                entry = calls.setdefault(delta.index, ["", ""])
                if delta.function and delta.function.name:
                    entry[0] = delta.function.name
                if delta.function and delta.function.arguments:
                    entry[1] += delta.function.arguments
        expected = [(c.function.name, c.function.arguments) for c in whole.message.tool_calls or []]
        assert [tuple(calls[i]) for i in sorted(calls)] == expected, max_tokens
        assert content == (whole.message.content or ""), max_tokens
        assert finish == whole.finish_reason, max_tokens
        assert "<tool_call>" not in content, max_tokens
        if whole.finish_reason == "length" and expected:
            assert expected[0][0] == "f"


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
