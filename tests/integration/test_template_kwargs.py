"""chat_template_kwargs on the real engine and tokenizer: a key that is the tokenizer's
own parameter gets a 400 naming it (it used to reach `apply_chat_template`: a TypeError's
text, or the request's own template rendered), and `add_generation_prompt` there acts as
the request field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.conftest import LiveGateway
from tests.integration.live_helpers import post_ok
from tests.openapi_schema import load_openapi, validate_schema

HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("key", "value", "stream"),
    [
        ("chat_template", "X{{ messages[0].content }}", False),
        ("chat_template", "X{{ messages[0].content }}", True),
        ("tokenize", True, False),
        ("tools", [{"type": "function", "function": {"name": "f"}}], False),
    ],
)
def test_the_tokenizers_own_parameter_is_a_400_naming_it(
    gateway: LiveGateway, key: str, value: Any, stream: bool
) -> None:
    payload = {
        "messages": HI,
        "max_tokens": 2,
        "stream": stream,
        "chat_template_kwargs": {key: value},
    }
    r = httpx.post(gateway.v1 + "/chat/completions", json=payload, timeout=60)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == f"chat_template_kwargs.{key}"
    assert "is not accepted" in error["message"] and "TokenizerPool" not in error["message"]
    if load_openapi() is not None:
        validate_schema("ErrorResponse", r.json())
    # /tokenize renders the same way and refuses the same key
    t = httpx.post(
        gateway.base_url + "/tokenize",
        json={"messages": HI, "chat_template_kwargs": {key: value}},
        timeout=30,
    )
    assert t.status_code == 400 and t.json()["error"]["param"] == error["param"]


def test_add_generation_prompt_in_the_kwargs_acts_as_the_field(gateway: LiveGateway) -> None:
    def ids(**fields: Any) -> list[int]:
        r = httpx.post(gateway.base_url + "/tokenize", json={"messages": HI, **fields}, timeout=30)
        assert r.status_code == 200, r.text
        return list(r.json()["tokens"])

    lifted = ids(chat_template_kwargs={"add_generation_prompt": False})
    assert lifted == ids(add_generation_prompt=False)
    assert len(lifted) < len(ids())  # without the assistant turn's opening
    body = post_ok(
        gateway,
        "/chat/completions",
        {"messages": HI, "max_tokens": 2, "chat_template_kwargs": {"add_generation_prompt": False}},
    )
    assert body["usage"]["prompt_tokens"] == len(lifted)
