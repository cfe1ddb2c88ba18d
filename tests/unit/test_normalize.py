"""The normalization rules, one by one, without the app."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.normalize import (
    QWEN3_NON_THINKING,
    QWEN3_THINKING,
    Defaults,
    fill_system_message,
    hoist_system_messages,
    lift_extra_body,
    normalize,
    requested_thinking,
    sampling_defaults,
    strip_invisible_messages,
)
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest, ChatMessage


def req(**fields: Any) -> ChatCompletionRequest:
    fields.setdefault("messages", [{"role": "user", "content": "hi"}])
    return ChatCompletionRequest.model_validate(fields)


def msgs(*pairs: tuple[str, str]) -> list[ChatMessage]:
    return [ChatMessage(role=role, content=content) for role, content in pairs]  # type: ignore[arg-type]


def test_system_message_added_when_missing() -> None:
    out, fired = fill_system_message(msgs(("user", "hi")), "be brief")
    assert fired
    assert [(m.role, m.content) for m in out] == [("system", "be brief"), ("user", "hi")]


def test_existing_system_message_kept() -> None:
    original = msgs(("system", "mine"), ("user", "hi"))
    out, fired = fill_system_message(original, "default")
    assert not fired and out is original


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([("user", "hi"), ("system", "late")], [("system", "late"), ("user", "hi")]),
        ([("developer", "dev"), ("user", "hi")], [("system", "dev"), ("user", "hi")]),
        (
            [("system", "a"), ("user", "hi"), ("system", "b")],
            [("system", "a\n\nb"), ("user", "hi")],
        ),
    ],
)
def test_system_messages_hoisted_and_merged(
    given: list[tuple[str, str]], expected: list[tuple[str, str]]
) -> None:
    out, fired = hoist_system_messages(msgs(*given))
    assert fired
    assert [(m.role, m.content) for m in out] == expected


def test_first_system_message_not_touched() -> None:
    original = msgs(("system", "a"), ("user", "hi"))
    assert hoist_system_messages(original) == (original, False)


def test_invisible_characters_removed_from_strings_and_parts() -> None:
    messages = [
        ChatMessage(role="user", content="he\u200bllo\ufeff \u202eworld\u00ad"),
        ChatMessage.model_validate(
            {"role": "user", "content": [{"type": "text", "text": "a\u2060b"}]}
        ),
        ChatMessage(role="user", content="你好，世界"),
    ]
    out, fired = strip_invisible_messages(messages)
    assert fired
    assert out[0].content == "hello world"
    assert out[1].text() == "ab"
    assert out[2] is messages[2]


def test_lone_surrogate_is_a_400() -> None:
    with pytest.raises(GatewayError) as err:
        strip_invisible_messages([ChatMessage(role="user", content="bad \ud800 text")])
    assert err.value.status == 400
    assert err.value.param == "messages[0].content"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, None),
        ({"enable_thinking": False}, False),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
        ({"extra_body": {"enable_thinking": False}}, False),
        ({"extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}, True),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": "low"}, True),
        ({"enable_thinking": True, "chat_template_kwargs": {"enable_thinking": False}}, True),
    ],
)
def test_requested_thinking(fields: dict[str, Any], expected: bool | None) -> None:
    assert requested_thinking(req(**fields)) is expected


def test_literal_extra_body_fields_are_applied_but_explicit_ones_win() -> None:
    out, fired = lift_extra_body(req(top_p=0.5, extra_body={"top_p": 0.9, "top_k": 5}))
    assert fired
    assert out.top_p == 0.5 and out.top_k == 5


def test_invalid_literal_extra_body_is_a_400() -> None:
    with pytest.raises(GatewayError):
        lift_extra_body(req(extra_body={"temperature": 9}))


def test_sampling_defaults_follow_the_mode() -> None:
    assert sampling_defaults(True, Defaults()) == QWEN3_THINKING
    assert sampling_defaults(False, Defaults()) == QWEN3_NON_THINKING


def test_settings_beat_generation_config_which_beats_qwen_defaults() -> None:
    defaults = Defaults(
        sampling={"top_p": 0.5},
        generation_config={"top_p": 0.7, "temperature": 0.3, "top_k": 20},
    )
    out = sampling_defaults(False, defaults)
    assert out["top_p"] == 0.5  # setting
    assert out["temperature"] == 0.3  # the model says otherwise
    assert out["top_k"] == 20


def test_generation_config_with_qwens_own_values_keeps_the_mode_values() -> None:
    defaults = Defaults(generation_config=dict(QWEN3_THINKING))
    assert sampling_defaults(False, defaults) == QWEN3_NON_THINKING


def test_normalize_fills_only_what_is_missing() -> None:
    result = normalize(req(temperature=0.3, top_p=0.9), Defaults())
    assert result.request.temperature == 0.3
    assert result.request.top_p == 0.9
    assert result.request.top_k == 20
    assert result.request.messages[0].role == "system"
    assert "system_message" in result.fired and "sampling_defaults" in result.fired


def test_normalize_passes_thinking_to_the_template() -> None:
    result = normalize(req(chat_template_kwargs={"enable_thinking": False, "x": 1}), Defaults())
    assert result.template_kwargs == {"enable_thinking": False, "x": 1}
    assert result.thinking is False
    assert result.request.temperature == QWEN3_NON_THINKING["temperature"]
    assert "thinking_flag" in result.fired


def test_server_default_thinking_applies_when_request_is_silent() -> None:
    result = normalize(req(), Defaults(enable_thinking=False))
    assert result.template_kwargs["enable_thinking"] is False
    assert normalize(req(), Defaults()).template_kwargs == {}


def test_nothing_fires_on_a_complete_request() -> None:
    full = req(
        messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        temperature=0.1,
        top_p=0.2,
        top_k=3,
    )
    assert normalize(full, Defaults()).fired == ()


def test_no_empty_system_message_when_the_template_makes_one_for_tools() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    offered = normalize(req(tools=[tool]), Defaults())
    assert offered.request.messages[0].role == "user"
    refused = normalize(req(tools=[tool], tool_choice="none"), Defaults())
    assert refused.request.messages[0].role == "system"


def test_fill_system_off_sends_the_conversation_as_it_came() -> None:
    off = Defaults(system_prompt="be brief", fill_system=False)
    result = normalize(req(), off)
    assert [m.role for m in result.request.messages] == ["user"]
    assert "system_message" not in result.fired
    moved = normalize(
        req(messages=[{"role": "user", "content": "hi"}, {"role": "system", "content": "s"}]), off
    )
    assert [m.role for m in moved.request.messages] == ["system", "user"]
