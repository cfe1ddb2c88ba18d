"""Qwen3 thinking end to end: the trained tiny model really emits `<think>` blocks."""

from __future__ import annotations

import json
import os

import httpx
import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from tests.integration.conftest import LiveGateway
from tests.integration.think_model import ANSWER_TEXT, THINK_TEXT

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("GATEWAY_TEST_UNTRAINED")),
    reason="needs the trained think model (GATEWAY_TEST_UNTRAINED is set)",
)
GREEDY = {"temperature": 0, "max_tokens": 200}
ASK = [{"role": "user", "content": "请用三句话解释量子纠缠"}]


def chat(gateway: LiveGateway, **body: object) -> dict[str, object]:
    payload = {"model": gateway.model, "messages": ASK, **GREEDY, **body}
    r = httpx.post(gateway.v1 + "/chat/completions", json=payload, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def message(body: dict[str, object]) -> dict[str, str]:
    return body["choices"][0]["message"]  # type: ignore[index, no-any-return]


def test_reasoning_is_separated_from_the_answer(gateway: LiveGateway) -> None:
    msg = message(chat(gateway))
    assert msg["reasoning_content"] == THINK_TEXT
    assert msg["reasoning"] == THINK_TEXT
    assert msg["content"] == ANSWER_TEXT


def test_return_reasoning_false_drops_it(gateway: LiveGateway) -> None:
    msg = message(chat(gateway, return_reasoning=False))
    assert "reasoning_content" not in msg and "reasoning" not in msg
    assert msg["content"] == ANSWER_TEXT


def test_reasoning_inline_for_langchain_users(gateway: LiveGateway) -> None:
    msg = message(chat(gateway, reasoning_in_content=True))
    assert msg["content"].startswith("<think>")
    assert THINK_TEXT in msg["content"] and msg["content"].endswith(ANSWER_TEXT)


@pytest.mark.parametrize(
    "switch",
    [
        {"enable_thinking": False},
        {"chat_template_kwargs": {"enable_thinking": False}},
        {"extra_body": {"enable_thinking": False}},
        {"reasoning_effort": "none"},
    ],
)
def test_thinking_off_reaches_the_template(gateway: LiveGateway, switch: dict[str, object]) -> None:
    on = chat(gateway, max_tokens=1)
    off = chat(gateway, max_tokens=60, **switch)
    # With thinking off the template appends an empty think block to the prompt ...
    assert off["usage"]["prompt_tokens"] > on["usage"]["prompt_tokens"]  # type: ignore[index]
    # ... and the model answers straight away.
    msg = message(off)
    assert msg["content"] == ANSWER_TEXT
    assert not msg.get("reasoning_content")


def test_streaming_separates_reasoning(gateway: LiveGateway) -> None:
    payload = {"model": gateway.model, "messages": ASK, "stream": True, **GREEDY}
    reasoning, content, roles = "", "", 0
    with httpx.stream("POST", gateway.v1 + "/chat/completions", json=payload, timeout=120) as r:
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            delta = json.loads(line[6:])["choices"][0]["delta"]
            roles += "role" in delta
            reasoning += delta.get("reasoning_content", "")
            content += delta.get("content", "")
            assert delta.get("reasoning_content") == delta.get("reasoning")
            assert "<think>" not in delta.get("content", "")
    assert roles == 1
    assert reasoning == THINK_TEXT
    assert content == ANSWER_TEXT


def test_thinking_budget_closes_the_block_and_the_model_answers(gateway: LiveGateway) -> None:
    full = chat(gateway)
    capped = chat(gateway, max_reasoning_tokens=8)
    msg = message(capped)
    assert msg["reasoning_content"]
    assert THINK_TEXT.startswith(msg["reasoning_content"])
    assert len(msg["reasoning_content"]) < len(THINK_TEXT)
    assert msg["content"] == ANSWER_TEXT
    usage = capped["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]  # type: ignore[index]
    assert usage["completion_tokens"] < full["usage"]["completion_tokens"]  # type: ignore[index]
    assert capped["choices"][0]["finish_reason"] == "stop"  # type: ignore[index]


def test_thinking_budget_streaming(gateway: LiveGateway) -> None:
    payload = {
        "model": gateway.model,
        "messages": ASK,
        "stream": True,
        "max_reasoning_tokens": 8,
        "stream_options": {"include_usage": True},
        **GREEDY,
    }
    reasoning, content, usage = "", "", None
    with httpx.stream("POST", gateway.v1 + "/chat/completions", json=payload, timeout=120) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk["choices"]:
                    reasoning += choice["delta"].get("reasoning_content", "")
                    content += choice["delta"].get("content", "")
    assert reasoning and THINK_TEXT.startswith(reasoning) and len(reasoning) < len(THINK_TEXT)
    assert content == ANSWER_TEXT
    assert usage is not None and usage["completion_tokens"] > 8


def test_the_seeds_langchain_client(gateway: LiveGateway) -> None:
    chat_model = ChatOpenAI(
        model=gateway.model,
        temperature=0.5,
        base_url=gateway.v1,
        api_key="EMPTY",
        streaming=True,
        extra_body={"enable_thinking": True, "return_reasoning": True},
        max_retries=0,
    )
    response = chat_model.invoke("请用三句话解释量子纠缠")
    assert ANSWER_TEXT in str(response.content)
    streamed = "".join(str(c.content) for c in chat_model.stream("hello"))
    assert ANSWER_TEXT in streamed
    robust = chat_model.invoke(
        [
            SystemMessage(content="你是一个严谨的AI助手，回答需准确简洁"),
            HumanMessage(content="Qwen3-0.6B的架构特点是什么？"),
        ],
        temperature=0.3,
        top_p=0.9,
        max_tokens=1024,
    )
    assert ANSWER_TEXT in str(robust.content)


def test_langchain_can_see_reasoning_inline(gateway: LiveGateway) -> None:
    chat_model = ChatOpenAI(
        model=gateway.model,
        temperature=0,
        base_url=gateway.v1,
        api_key="EMPTY",
        extra_body={"reasoning_in_content": True},
        max_retries=0,
    )
    content = str(chat_model.invoke("hello").content)
    assert "<think>" in content and THINK_TEXT in content


def test_openai_sdk_reads_reasoning_content(gateway: LiveGateway) -> None:
    client = openai.OpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0)
    resp = client.chat.completions.create(
        model=gateway.model, messages=ASK, temperature=0, extra_body={"enable_thinking": True}
    )
    extra = resp.choices[0].message.model_extra or {}
    assert extra.get("reasoning_content") == THINK_TEXT
