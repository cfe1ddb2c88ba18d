"""Render a chat request to prompt token ids with the model's own chat template."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.engine import Tokenizer
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest, ChatMessage


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its text (for logs and reasoning detection) and token ids."""

    text: str
    token_ids: list[int]


def message_dict(message: ChatMessage) -> dict[str, Any]:
    """The template's view of a message: text parts joined, extras kept."""
    out: dict[str, Any] = {"role": message.role, "content": message.text()}
    if message.name is not None:
        out["name"] = message.name
    if message.tool_calls is not None:
        out["tool_calls"] = message.tool_calls
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning_content is not None:
        out["reasoning_content"] = message.reasoning_content
    return out


def render_prompt(
    tokenizer: Tokenizer,
    request: ChatCompletionRequest,
    template_kwargs: dict[str, Any],
) -> Prompt:
    """Apply the chat template and tokenize (the template adds the special tokens)."""
    conversation = [message_dict(m) for m in request.messages]
    try:
        text = tokenizer.apply_chat_template(
            conversation,
            tools=request.tools,
            add_generation_prompt=True,
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
    return Prompt(text=text, token_ids=tokenizer.encode(text, add_special_tokens=False))
