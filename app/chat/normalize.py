"""Request normalization: small pure functions that remove the traps Qwen3 clients hit.

Each function returns the new value and whether it fired; `normalize` composes them and
lists the kinds that fired (counted in `/metrics`). Explicit client values always win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.chat.template_kwargs import split_template_kwargs
from app.chat.tools import forces_tool_call, narrow_allowed_tools
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest, ChatMessage, TextPart
from app.structured import wants_constraint
from app.text import find_unencodable, strip_invisible

# Qwen3's published sampling recommendations per mode.
QWEN3_THINKING = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
QWEN3_NON_THINKING = {"temperature": 0.7, "top_p": 0.8, "top_k": 20}
SAMPLING_KEYS = ("temperature", "top_p", "top_k")


@dataclass(frozen=True)
class Defaults:
    """Server-side defaults (settings and the model's generation_config.json)."""

    system_prompt: str = ""
    fill_system: bool = True  # False: conversations without a system message stay so
    enable_thinking: bool | None = None  # None: the template's own default (on for Qwen3)
    sampling: dict[str, float] = field(default_factory=dict)  # GATEWAY_DEFAULT_* settings
    generation_config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Normalized:
    request: ChatCompletionRequest
    thinking: bool
    template_kwargs: dict[str, Any]
    fired: tuple[str, ...]


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def requested_thinking(request: ChatCompletionRequest) -> bool | None:
    """`enable_thinking` from wherever the client put it; None when it said nothing.

    Top level (the OpenAI SDK's `extra_body` lands there) wins, then
    `chat_template_kwargs`, then a literal `extra_body` object, then
    `reasoning_effort: "none"` (false; any other effort means true).
    """
    if request.enable_thinking is not None:
        return request.enable_thinking
    for holder in (request.chat_template_kwargs, request.extra_body):
        if holder:
            found = _bool(holder.get("enable_thinking"))
            if found is not None:
                return found
            nested = holder.get("chat_template_kwargs")
            if isinstance(nested, dict):
                found = _bool(nested.get("enable_thinking"))
                if found is not None:
                    return found
    if request.reasoning_effort is not None:
        return request.reasoning_effort.lower() not in ("none", "off", "false")
    return None


def lift_extra_body(request: ChatCompletionRequest) -> tuple[ChatCompletionRequest, bool]:
    """Apply the fields of a literal `"extra_body": {...}` (curl users copying SDK code)."""
    extra = request.extra_body
    if not extra:
        return request, False
    known = set(ChatCompletionRequest.model_fields) - {"extra_body", "messages", "model"}
    updates = {k: v for k, v in extra.items() if k in known and k not in request.model_fields_set}
    if not updates:
        return request, False
    merged = request.model_dump(exclude_unset=True) | updates
    try:
        return ChatCompletionRequest.model_validate(merged), True
    except Exception as exc:
        raise GatewayError(f"Invalid extra_body: {exc}", param="extra_body") from exc


def clean_text(text: str, where: str) -> tuple[str, bool]:
    """Strip invisible characters; 400 for text that can't be encoded (lone surrogates)."""
    bad = find_unencodable(text)
    if bad is not None:
        raise GatewayError(
            f"{where} contains an unpaired surrogate (U+{ord(text[bad]):04X}) at index {bad}; "
            "send valid UTF-16 pairs or UTF-8 text.",
            param=where,
            code="invalid_encoding",
        )
    cleaned = strip_invisible(text)
    return cleaned, cleaned is not text and cleaned != text


def strip_invisible_messages(messages: list[ChatMessage]) -> tuple[list[ChatMessage], bool]:
    """Remove zero-width and bidi-control characters from every message's text."""
    out: list[ChatMessage] = []
    fired = False
    for i, message in enumerate(messages):
        where = f"messages[{i}].content"
        content = message.content
        changed = False
        if isinstance(content, str):
            content, changed = clean_text(content, where)
        elif isinstance(content, list):
            parts: list[TextPart] = []
            for j, part in enumerate(content):
                text, part_changed = clean_text(part.text, f"{where}[{j}].text")
                changed = changed or part_changed
                parts.append(part.model_copy(update={"text": text}) if part_changed else part)
            content = parts
        if changed:
            fired = True
            message = message.model_copy(update={"content": content})
        out.append(message)
    return out, fired


def hoist_system_messages(messages: list[ChatMessage]) -> tuple[list[ChatMessage], bool]:
    """Merge system/developer messages into one system message at the front."""
    system = [m for m in messages if m.role in ("system", "developer")]
    if not system:
        return messages, False
    if len(system) == 1 and messages[0] is system[0] and system[0].role == "system":
        return messages, False
    merged = ChatMessage(role="system", content="\n\n".join(m.text() for m in system if m.text()))
    rest = [m for m in messages if m.role not in ("system", "developer")]
    return [merged, *rest], True


def fill_system_message(messages: list[ChatMessage], prompt: str) -> tuple[list[ChatMessage], bool]:
    """Add the default system message to a conversation that has none."""
    if messages and messages[0].role == "system":
        return messages, False
    return [ChatMessage(role="system", content=prompt), *messages], True


def sampling_defaults(thinking: bool, defaults: Defaults) -> dict[str, float]:
    """Defaults for temperature, top_p and top_k: settings, then the model, then Qwen3's."""
    qwen = QWEN3_THINKING if thinking else QWEN3_NON_THINKING
    out: dict[str, float] = {}
    for key in SAMPLING_KEYS:
        if key in defaults.sampling:
            out[key] = defaults.sampling[key]
            continue
        from_model = defaults.generation_config.get(key)
        # Qwen3 ships its thinking-mode values in generation_config.json; only a value
        # that says otherwise overrides the recommendation for the mode in use.
        if from_model is not None and from_model != QWEN3_THINKING[key]:
            out[key] = from_model
        else:
            out[key] = qwen[key]
    return out


def fill_sampling(
    request: ChatCompletionRequest, thinking: bool, defaults: Defaults
) -> tuple[dict[str, Any], bool]:
    """The sampling values the client left out."""
    updates = {
        key: value
        for key, value in sampling_defaults(thinking, defaults).items()
        if getattr(request, key) is None
    }
    if "top_k" in updates:
        updates["top_k"] = int(updates["top_k"])
    return updates, bool(updates)


def normalize(request: ChatCompletionRequest, defaults: Defaults) -> Normalized:
    """Apply every rule in order; returns the request the engine will see."""
    fired: list[str] = []
    request, lifted = lift_extra_body(request)
    if lifted:
        fired.append("extra_body")
    request, narrowed = narrow_allowed_tools(request)
    if narrowed:
        fired.append("allowed_tools")
    messages, changed = strip_invisible_messages(request.messages)
    if changed:
        fired.append("invisible_chars")
    messages, changed = hoist_system_messages(messages)
    if changed:
        fired.append("system_order")
    offers_tools = bool(request.tools) and request.tool_choice != "none"
    if defaults.fill_system and (defaults.system_prompt or not offers_tools):
        # With tools the template opens a system turn of its own; an empty one adds nothing.
        messages, changed = fill_system_message(messages, defaults.system_prompt)
        if changed:
            fired.append("system_message")

    asked = requested_thinking(request)
    thinking = asked if asked is not None else defaults.enable_thinking
    if asked is not None and request.enable_thinking is None:
        fired.append("thinking_flag")
    if asked is None and (wants_constraint(request) or forces_tool_call(request)):
        # A grammar starts at the first answer token: without an explicit ask, no <think>.
        thinking = False
        fired.append("constrained_thinking")
    template_kwargs, lifted_fields = split_template_kwargs(request)
    if thinking is not None:
        template_kwargs["enable_thinking"] = thinking
    effective_thinking = thinking if thinking is not None else True

    updates, changed = fill_sampling(request, effective_thinking, defaults)
    if changed:
        fired.append("sampling_defaults")
    updates["messages"] = messages
    updates.update(lifted_fields)
    return Normalized(
        request=request.model_copy(update=updates),
        thinking=effective_thinking,
        template_kwargs=template_kwargs,
        fired=tuple(fired),
    )
