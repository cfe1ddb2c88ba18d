"""`chat_template_kwargs`: the variables a request adds to the chat template, less what
the gateway decides itself.

The tokenizer's `apply_chat_template` takes them as keyword arguments beside its own
parameters, so a key that names one of those would clash with the gateway's (`tools`,
`tokenize`: a TypeError) or change what is rendered or returned (`chat_template` swaps the
model's template for one the request wrote, run in the server; `return_dict`). Those are
refused with a 400 that names the key. Two have a field of their own
in the request (vLLM's `add_generation_prompt` and `continue_final_message`): a value
here is taken as that field's where the field was not sent.
"""

from __future__ import annotations

from typing import Any

from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest

LIFTED = ("add_generation_prompt", "continue_final_message")

_CONVERSATION = "the conversation goes in the request's `messages`"
REFUSED = {
    "tools": "send them in the request's `tools` field, which the gateway plans from",
    "chat_template": "the gateway renders with the served model's own template",
    "conversation": _CONVERSATION,
    "messages": _CONVERSATION,
}
OUTPUT_PARAMETERS = (
    "tokenize",
    "padding",
    "truncation",
    "max_length",
    "return_tensors",
    "return_dict",
    "return_assistant_tokens_mask",
    "tokenizer_kwargs",
)
"""`apply_chat_template`'s parameters for its output, not the template's input."""


def refusal(key: str) -> str | None:
    """Why `key` can't be a template variable; None where it can."""
    if key in REFUSED:
        return REFUSED[key]
    if key in OUTPUT_PARAMETERS:
        return "it shapes the tokenizer's output, which the gateway needs as text"
    return None


def split_template_kwargs(
    request: ChatCompletionRequest,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The template's extra variables, and the request fields lifted out of them."""
    given = dict(request.chat_template_kwargs or {})
    for key in given:
        why = refusal(key)
        if why is not None:
            raise GatewayError(
                f"chat_template_kwargs.{key} is not accepted: {why}.",
                param=f"chat_template_kwargs.{key}",
            )
    lifted: dict[str, Any] = {}
    for key in LIFTED:
        if key not in given:
            continue
        value = given.pop(key)
        param = f"chat_template_kwargs.{key}"
        if not isinstance(value, bool):
            raise GatewayError(f"{param} must be true or false.", param=param)
        if key in request.model_fields_set and getattr(request, key) != value:
            raise GatewayError(
                f"{param} ({str(value).lower()}) disagrees with the request's own `{key}`; "
                "send one of them.",
                param=param,
            )
        lifted[key] = value
    return given, lifted
