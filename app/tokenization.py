"""`/tokenize` and `/detokenize`, shaped as `vllm serve`'s.

Chat messages are rendered exactly as `/v1/chat/completions` would render them (the
same normalization, template and tools), so the count is what a chat request costs;
prompt text gets the completions path's invisible-character stripping.
"""

from __future__ import annotations

from typing import Any

from app.chat.normalize import clean_text, normalize
from app.chat.prompt import render_text
from app.chat.template_kwargs import LIFTED
from app.chat.tools import plan_tools
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest
from app.schemas.completions import DetokenizeRequest, TokenizeRequest
from app.state import Gateway


def tokenize(gateway: Gateway, body: TokenizeRequest) -> dict[str, Any]:
    """`{count, max_model_len, tokens, token_strs?}` for a prompt or chat messages."""
    gateway.served_model(body.model)
    tokenizer = gateway.engine.tokenizer
    if (body.prompt is None) == (body.messages is None):
        raise GatewayError("Send either prompt or messages.", param="prompt")
    if body.prompt is not None:
        text, _ = clean_text(body.prompt, "prompt")
        special = True if body.add_special_tokens is None else body.add_special_tokens
        ids = tokenizer.encode(text, add_special_tokens=special)
    else:
        ids = _chat_ids(gateway, body)
    out: dict[str, Any] = {
        "count": len(ids),
        "max_model_len": gateway.engine.info.max_model_len,
        "tokens": ids,
    }
    if body.return_token_strs:
        out["token_strs"] = list(tokenizer.convert_ids_to_tokens(ids))
    return out


def _chat_ids(gateway: Gateway, body: TokenizeRequest) -> list[int]:
    if not body.messages:
        raise GatewayError("messages must not be empty.", param="messages")
    request = ChatCompletionRequest(
        model=body.model,
        messages=body.messages,
        tools=body.tools,
        tool_choice=body.tool_choice,
        chat_template_kwargs=body.chat_template_kwargs,
        enable_thinking=body.enable_thinking,
        # only those sent: chat_template_kwargs may hold them too (app.chat.template_kwargs)
        **{key: getattr(body, key) for key in LIFTED if key in body.model_fields_set},
    )
    normalized = normalize(request, gateway.defaults)
    tokenizer = gateway.engine.tokenizer
    text = render_text(
        tokenizer,
        normalized.request,
        normalized.template_kwargs,
        plan_tools(normalized.request).template_tools,
    )
    return tokenizer.encode(text, add_special_tokens=bool(body.add_special_tokens))


def detokenize(gateway: Gateway, body: DetokenizeRequest) -> dict[str, Any]:
    """`{prompt}`: the text of the token ids (special tokens included)."""
    gateway.served_model(body.model)
    tokenizer = gateway.engine.tokenizer
    try:
        vocab: int | None = len(tokenizer)  # type: ignore[arg-type]
    except TypeError:
        vocab = None
    bad = [t for t in body.tokens if vocab is not None and t >= vocab]
    if bad:
        raise GatewayError(
            f"Token id {bad[0]} is outside the vocabulary (size {vocab}).", param="tokens"
        )
    return {"prompt": tokenizer.decode(body.tokens)}
