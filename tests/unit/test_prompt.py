"""app.chat.prompt: history tool calls for the template, and opening a think block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.chat.prompt import Prompt, open_think_block, template_tool_call


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
