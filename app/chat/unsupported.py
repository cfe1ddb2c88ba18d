"""OpenAI chat fields the gateway cannot honour, refused with a 400 that names them.

Ignoring them would answer something other than what was asked: an answer that never
calls the deprecated `functions`, text where audio was asked for, an answer without the
web search it was told to run. OpenAI's API refuses the last two as well on a model
without those abilities. `modalities: ["text"]` (some SDK wrappers send it) and `null`
values pass.
"""

from __future__ import annotations

import json

from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest

LEGACY_FIELDS = {
    "functions": 'tools instead, each function as {"type": "function", "function": {...}}',
    "function_call": 'tool_choice instead ("auto", "none", "required" or {"type": '
    '"function", "function": {"name": ...}}), with the functions as tools',
}


def refuse_unsupported(request: ChatCompletionRequest) -> None:
    """400 `unsupported_parameter` for the deprecated function fields, audio output or
    web search."""
    for legacy, instead in LEGACY_FIELDS.items():
        if getattr(request, legacy) is not None:
            raise GatewayError(
                f"{legacy} is deprecated and not supported; send {instead}.",
                param=legacy,
                code="unsupported_parameter",
            )
    if request.modalities and any(kind != "text" for kind in request.modalities):
        raise GatewayError(
            f"modalities {json.dumps(request.modalities)} are not supported: the served "
            'model writes text only; send ["text"] or leave modalities out.',
            param="modalities",
            code="unsupported_parameter",
        )
    if request.audio is not None:
        raise GatewayError(
            "audio output is not supported: the served model writes text only.",
            param="audio",
            code="unsupported_parameter",
        )
    if request.web_search_options is not None:
        raise GatewayError(
            "web_search_options is not supported: the gateway does not search the web.",
            param="web_search_options",
            code="unsupported_parameter",
        )
