"""Render a chat request to prompt token ids with the model's own chat template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.encode import encode
from app.engine import Tokenizer
from app.errors import GatewayError
from app.reasoning import THINK_OPEN
from app.schemas.chat import ChatCompletionRequest, ChatMessage


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its text (for logs and reasoning detection) and token ids."""

    text: str
    token_ids: list[int]


def template_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """A history tool call with its JSON-string `arguments` parsed (as `vllm serve` does).

    Templates write arguments with `tojson` or walk them as a mapping; a string that is not
    a JSON object is left as it is.
    """
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    try:
        arguments = json.loads(function["arguments"])
    except ValueError:
        return call
    if not isinstance(arguments, dict):
        return call
    return {**call, "function": {**function, "arguments": arguments}}


def message_dict(message: ChatMessage) -> dict[str, Any]:
    """The template's view of a message: text parts joined, extras kept."""
    out: dict[str, Any] = {"role": message.role, "content": message.text()}
    if message.name is not None:
        out["name"] = message.name
    if message.tool_calls is not None:
        out["tool_calls"] = [template_tool_call(call) for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning_content is not None:
        out["reasoning_content"] = message.reasoning_content
    return out


def render_text(
    tokenizer: Tokenizer,
    request: ChatCompletionRequest,
    template_kwargs: dict[str, Any],
    tools: list[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    """Apply the chat template (it adds the special tokens).

    `tools` are the tools to offer (`app.chat.tools.plan_tools` decides; none for
    `tool_choice: "none"`).
    """
    conversation = [message_dict(m) for m in request.messages]
    try:
        text = tokenizer.apply_chat_template(
            conversation,
            tools=tools or None,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            **template_kwargs,
        )
    except Exception as exc:  # jinja's TemplateError and friends: the request is at fault
        raise GatewayError(
            f"The chat template could not render these messages: {exc}",
            param="messages",
            code="invalid_messages",
        ) from exc
    if not isinstance(text, str):
        raise GatewayError("The chat template did not produce text.", status=500)
    return text


async def render_prompt(
    tokenizer: Tokenizer,
    request: ChatCompletionRequest,
    template_kwargs: dict[str, Any],
    tools: list[dict[str, Any]] | None = None,
) -> Prompt:
    """Apply the chat template and tokenize; a long prompt is tokenized off the event loop
    (`app.encode`)."""
    text = render_text(tokenizer, request, template_kwargs, tools)
    return Prompt(text=text, token_ids=await encode(tokenizer, text))


def open_think_block(tokenizer: Tokenizer, prompt: Prompt) -> Prompt:
    """The prompt with `<think>\n` appended (the model starts inside its reasoning)."""
    if prompt.text.rstrip().endswith(THINK_OPEN):
        return prompt
    opener = THINK_OPEN + "\n"
    ids = tokenizer.encode(opener, add_special_tokens=False)
    return Prompt(text=prompt.text + opener, token_ids=prompt.token_ids + ids)
