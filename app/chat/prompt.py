"""Render a chat request to prompt token ids with the model's own chat template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.encode import TurnTally, encode
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


def continues_final_message(request: ChatCompletionRequest) -> bool:
    """Whether the prompt ends inside the last message, for the model to continue it
    (vLLM's `continue_final_message`, or Qwen's `partial: true` on that message) instead
    of with a new assistant turn. Only the assistant's own message can be continued, and
    not together with `add_generation_prompt: true`."""
    last = request.messages[-1]
    if not (request.continue_final_message or last.partial):
        return False
    param = "continue_final_message" if request.continue_final_message else "messages"
    if last.role != "assistant":
        raise GatewayError(
            f"Only an assistant message can be continued, and the last message is the "
            f"{last.role}'s: end the messages with the assistant's partial answer.",
            param=param,
        )
    if request.add_generation_prompt:
        raise GatewayError(
            "add_generation_prompt and continue_final_message can't both be true: the "
            "prompt either opens a new assistant turn or continues the last message.",
            param="add_generation_prompt",
        )
    return True


def render_text(
    tokenizer: Tokenizer,
    request: ChatCompletionRequest,
    template_kwargs: dict[str, Any],
    tools: list[dict[str, Any]] | None = None,
) -> str:
    """Apply the chat template (it adds the special tokens).

    `tools` are the tools to offer (`app.chat.tools.plan_tools` decides; none for
    `tool_choice: "none"`). The prompt ends with a new assistant turn unless the request
    says otherwise (`add_generation_prompt: false`, or a continued last message).
    """
    conversation = [message_dict(m) for m in request.messages]
    ending: dict[str, bool] = {"add_generation_prompt": request.add_generation_prompt is not False}
    if continues_final_message(request):
        ending = {"add_generation_prompt": False, "continue_final_message": True}
    try:
        text = tokenizer.apply_chat_template(
            conversation,
            tools=tools or None,
            tokenize=False,
            **ending,
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
    tally: TurnTally | None = None,
) -> Prompt:
    """Apply the chat template and tokenize; a long prompt is tokenized off the event loop,
    its earlier turns remembered (`app.encode`; `tally` hears how many tokens were)."""
    text = render_text(tokenizer, request, template_kwargs, tools)
    return Prompt(text=text, token_ids=await encode(tokenizer, text, tally=tally))


def open_think_block(tokenizer: Tokenizer, prompt: Prompt) -> Prompt:
    """The prompt with `<think>\n` appended (the model starts inside its reasoning)."""
    if prompt.text.rstrip().endswith(THINK_OPEN):
        return prompt
    opener = THINK_OPEN + "\n"
    ids = tokenizer.encode(opener, add_special_tokens=False)
    return Prompt(text=prompt.text + opener, token_ids=prompt.token_ids + ids)
