"""Tests for the tiny model's chat template (app.tiny_template): Qwen3's generation
prompt, thinking switch, tools, tool calls and responses, and reasoning history."""

from __future__ import annotations

import json
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
TOOLS_SUFFIX = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
)


def render(tokenizer: Any, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    text = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    assert isinstance(text, str)
    return text


# ---------------------------------------------------------------------- chat template


def test_generation_prompt(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render(tokenizer, messages) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    )


def test_enable_thinking(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
    base = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    off = render(tokenizer, messages, add_generation_prompt=True, enable_thinking=False)
    assert off == base + "<think>\n\n</think>\n\n"
    on = render(tokenizer, messages, add_generation_prompt=True, enable_thinking=True)
    assert on == base


def test_tools_block_with_and_without_system(tokenizer: Any) -> None:
    tool_json = json.dumps(TOOLS[0], ensure_ascii=False)
    user = "<|im_start|>user\nWeather?<|im_end|>\n"
    with_system = render(
        tokenizer,
        [{"role": "system", "content": "Sys"}, {"role": "user", "content": "Weather?"}],
        tools=TOOLS,
    )
    assert with_system == (
        "<|im_start|>system\nSys\n\n" + TOOLS_PREAMBLE + tool_json + TOOLS_SUFFIX + user
    )
    without = render(tokenizer, [{"role": "user", "content": "Weather?"}], tools=TOOLS)
    assert without == "<|im_start|>system\n" + TOOLS_PREAMBLE + tool_json + TOOLS_SUFFIX + user


def test_tool_calls_and_grouped_tool_responses(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "b", "content": "rain"},
    ]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
        "<|im_start|>assistant\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
        "<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n"
        "<tool_response>\nrain\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_tool_call_after_content_is_on_a_new_line(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}],
        },
    ]
    # Like Qwen3, the final assistant turn after the last query gets a (here empty) think block.
    assert render(tokenizer, messages).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\nLet me check.\n"
        '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>\n'
    )


def test_list_of_parts_content(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": "Sys"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hello"},
                {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
                {"type": "text", "text": "world"},
            ],
        },
    ]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        "<|im_start|>system\nSys<|im_end|>\n"
        "<|im_start|>user\nHello\nworld<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_reasoning_content_kept_only_after_last_query(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2", "reasoning_content": "R2"},
    ]
    assert render(tokenizer, messages) == (
        "<|im_start|>user\nQ1<|im_end|>\n"
        "<|im_start|>assistant\nA1<|im_end|>\n"
        "<|im_start|>user\nQ2<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nR2\n</think>\n\nA2<|im_end|>\n"
    )


def test_inline_think_in_content_is_stripped_from_history(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "<think>\nR1\n</think>\n\nA1"},
        {"role": "user", "content": "Q2"},
    ]
    assert render(tokenizer, messages) == (
        "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
        "<|im_start|>user\nQ2<|im_end|>\n"
    )


def test_reasoning_kept_across_tool_turns_after_last_query(tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "need weather",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
        },
        {"role": "tool", "content": "42"},
    ]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        "<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nneed weather\n</think>\n\n"
        '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_chat_template_tokenizes_to_single_special_ids(tokenizer: Any) -> None:
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=True, add_generation_prompt=True
    )
    if not isinstance(ids, list):  # transformers 5 returns a BatchEncoding
        ids = ids["input_ids"]
    im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert ids[0] == im_start
    assert ids.count(im_start) == 2
    assert ids.count(im_end) == 1
