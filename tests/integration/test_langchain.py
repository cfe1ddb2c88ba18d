"""LangChain's ChatOpenAI configured exactly as the seeds do."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from tests.integration.conftest import LiveGateway


@pytest.fixture(scope="module")
def chat_model(gateway: LiveGateway) -> ChatOpenAI:
    return ChatOpenAI(
        model=gateway.model,
        temperature=0.5,
        base_url=gateway.v1,
        api_key="EMPTY",
        max_tokens=64,
        max_retries=0,
    )


def test_invoke(chat_model: ChatOpenAI) -> None:
    response = chat_model.invoke("请用三句话解释量子纠缠")
    assert isinstance(response.content, str)
    assert response.usage_metadata is not None
    assert response.usage_metadata["input_tokens"] > 0
    assert response.response_metadata["finish_reason"] in ("stop", "length")


def test_stream(chat_model: ChatOpenAI) -> None:
    chunks = list(chat_model.stream("hello"))
    assert len(chunks) >= 2
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.response_metadata.get("finish_reason") in ("stop", "length")


def test_batch(chat_model: ChatOpenAI) -> None:
    results = chat_model.batch(["hello", "你好", "what is 2+2?"])
    assert len(results) == 3
    assert all(r.response_metadata["finish_reason"] in ("stop", "length") for r in results)


def test_robust_call_with_system_message(chat_model: ChatOpenAI) -> None:
    messages = [
        SystemMessage(content="你是一个严谨的AI助手，回答需准确简洁"),
        HumanMessage(content="Qwen3-0.6B的架构特点是什么？"),
    ]
    response = chat_model.invoke(messages, temperature=0.3, top_p=0.9, max_tokens=1024)
    assert response.response_metadata["finish_reason"] in ("stop", "length")
