"""app.chat.prompt: history tool calls for the template, opening a think block, and
tokenizing long prompts off the event loop."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from app.chat.prompt import (
    Prompt,
    open_think_block,
    render_prompt,
    render_text,
    template_tool_call,
)
from app.encode import OFF_LOOP_CHARS
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest


def test_template_tool_call_parses_json_arguments() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    assert template_tool_call(call) == {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": {"a": 1}},
    }
    assert call["function"]["arguments"] == '{"a": 1}'  # the request is left alone


def test_template_tool_call_leaves_other_shapes() -> None:
    for call in (
        {"function": {"name": "f", "arguments": "not json"}},
        {"function": {"name": "f", "arguments": "[1]"}},
        {"function": {"name": "f", "arguments": {"a": 1}}},
        {"name": "f"},
    ):
        assert template_tool_call(call) is call


class Tok:
    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int], **kwargs: Any) -> str:
        return "".join(map(chr, ids))


def test_open_think_block() -> None:
    prompt = Prompt("<|im_start|>assistant\n", [1, 2])
    opened = open_think_block(Tok(), prompt)  # type: ignore[arg-type]
    assert opened.text == "<|im_start|>assistant\n<think>\n"
    assert opened.token_ids == [1, 2, *map(ord, "<think>\n")]
    assert open_think_block(Tok(), opened) is opened  # type: ignore[arg-type]


class TemplateTok(Tok):
    """A tokenizer with a chat template that records which thread encoded."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def apply_chat_template(self, conversation: list[dict[str, Any]], **kwargs: Any) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in conversation)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        self.threads.append(threading.current_thread().name)
        return super().encode(text, add_special_tokens)


def _request(content: str) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user", "content": content}]}
    )


async def test_a_long_prompt_is_tokenized_off_the_event_loop() -> None:
    tok = TemplateTok()
    short = _request("hi")
    long = _request("x" * OFF_LOOP_CHARS)
    for request in (short, long):
        got = await render_prompt(tok, request, {})  # type: ignore[arg-type]
        text = render_text(tok, request, {})  # type: ignore[arg-type]
        assert got == Prompt(text, [ord(c) for c in text])
    assert tok.threads[0] == threading.current_thread().name  # short: inline
    assert tok.threads[1].startswith("encode")  # long: the encode thread


PREFILL = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello, I am"}]


def test_the_prompt_ends_as_the_request_asks(tokenizer: Any) -> None:
    def end(messages: list[dict[str, Any]], **extra: Any) -> str:
        return render_text(tokenizer, ChatCompletionRequest(messages=messages, **extra), {})

    assert end(PREFILL).endswith("Hello, I am<|im_end|>\n<|im_start|>assistant\n")
    # vLLM's continue_final_message, and Qwen's partial mode: the model goes on from here
    assert end(PREFILL, continue_final_message=True).endswith("</think>\n\nHello, I am")
    partial = [PREFILL[0], {**PREFILL[1], "partial": True}]
    assert end(partial) == end(PREFILL, continue_final_message=True)
    assert end(PREFILL, continue_final_message=True, add_generation_prompt=False) == end(partial)
    assert end(PREFILL, add_generation_prompt=False).endswith("Hello, I am<|im_end|>\n")


def test_only_the_assistants_last_message_can_be_continued(tokenizer: Any) -> None:
    cases = [
        ({"messages": PREFILL[:1], "continue_final_message": True}, "continue_final_message"),
        ({"messages": [{"role": "user", "content": "hi", "partial": True}]}, "messages"),
        (
            {"messages": PREFILL, "continue_final_message": True, "add_generation_prompt": True},
            "add_generation_prompt",
        ),
    ]
    for body, param in cases:
        with pytest.raises(GatewayError) as caught:
            render_text(tokenizer, ChatCompletionRequest.model_validate(body), {})
        assert caught.value.param == param
