"""chat_template_kwargs: template variables pass, the tokenizer's own parameters are
refused with their key named, and vLLM's two prompt-ending fields are lifted out."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.normalize import Defaults, normalize
from app.chat.template_kwargs import OUTPUT_PARAMETERS, split_template_kwargs
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest

HI = [{"role": "user", "content": "hi"}]


def request(**fields: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"messages": HI, **fields})


def test_template_variables_pass_untouched() -> None:
    given = {"enable_thinking": False, "documents": [{"text": "d"}], "custom": 1}
    kwargs, lifted = split_template_kwargs(request(chat_template_kwargs=given))
    assert kwargs == given and lifted == {}


@pytest.mark.parametrize(
    "key", ["tools", "chat_template", "conversation", "messages", *OUTPUT_PARAMETERS]
)
def test_the_tokenizers_own_parameters_are_refused_by_name(key: str) -> None:
    with pytest.raises(GatewayError) as caught:
        split_template_kwargs(request(chat_template_kwargs={key: True}))
    assert caught.value.status == 400
    assert caught.value.param == f"chat_template_kwargs.{key}"
    assert f"chat_template_kwargs.{key} is not accepted" in caught.value.message


@pytest.mark.parametrize("key", ["add_generation_prompt", "continue_final_message"])
def test_a_prompt_ending_field_is_lifted_where_the_request_left_it_out(key: str) -> None:
    kwargs, lifted = split_template_kwargs(request(chat_template_kwargs={key: True, "x": 1}))
    assert kwargs == {"x": 1} and lifted == {key: True}
    # the same value at both places is no conflict
    assert split_template_kwargs(request(**{key: True}, chat_template_kwargs={key: True}))[1]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"chat_template_kwargs": {"add_generation_prompt": "no"}}, "must be true or false"),
        (
            {
                "continue_final_message": False,
                "chat_template_kwargs": {"continue_final_message": True},
            },
            "disagrees with the request's own `continue_final_message`",
        ),
    ],
)
def test_a_bad_or_contradicting_lifted_value_is_a_400(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(GatewayError) as caught:
        split_template_kwargs(request(**fields))
    assert says in caught.value.message
    assert str(caught.value.param).startswith("chat_template_kwargs.")


def test_normalize_sets_the_lifted_field_and_keeps_it_out_of_the_template() -> None:
    body = request(chat_template_kwargs={"add_generation_prompt": False, "enable_thinking": True})
    out = normalize(body, Defaults())
    assert out.request.add_generation_prompt is False
    assert out.template_kwargs == {"enable_thinking": True}
