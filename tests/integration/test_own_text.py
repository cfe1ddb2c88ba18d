"""The gateway decodes plain chat requests' tokens itself (`app.text_stream`) when the
prompt is long: on the real engine its text is vLLM's, whole and streamed, for sampled
answers full of cut characters, special and added tokens, and for a forced one that ends
at the EOS token. A request with logprobs is the reference: vLLM detokenizes that one."""

from __future__ import annotations

from typing import Any

import pytest

from app.text_stream import MIN_PROMPT_TOKENS
from tests.integration.conftest import LiveGateway
from tests.integration.live_helpers import post_ok, sse_frames

SEEDS = (1, 2, 3)
LONG = " ".join(f"w{i} 于是乎" for i in range(160))  # a prompt past MIN_PROMPT_TOKENS


def long_enough(body: dict[str, Any]) -> dict[str, Any]:
    assert body["usage"]["prompt_tokens"] >= MIN_PROMPT_TOKENS
    return body


def sampled(gateway: LiveGateway, seed: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": gateway.model,
        "messages": [{"role": "user", "content": "Tell me about 于是乎 and café. " + LONG}],
        "max_tokens": 48,
        "seed": seed,
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": 0,
        **extra,
    }


def message_of(body: dict[str, Any]) -> tuple[str, str]:
    message = body["choices"][0]["message"]
    return message.get("reasoning_content") or "", message.get("content") or ""


def streamed_message(gateway: LiveGateway, payload: dict[str, Any]) -> tuple[str, str]:
    reasoning = content = ""
    for chunk in sse_frames(gateway, "/chat/completions", payload):
        for choice in chunk["choices"]:
            reasoning += choice["delta"].get("reasoning_content") or ""
            content += choice["delta"].get("content") or ""
    return reasoning, content


@pytest.mark.parametrize("seed", SEEDS)
def test_own_text_is_vllms(gateway: LiveGateway, seed: int) -> None:
    reference = sampled(gateway, seed, logprobs=True)
    theirs = message_of(post_ok(gateway, "/chat/completions", reference))
    ours = message_of(long_enough(post_ok(gateway, "/chat/completions", sampled(gateway, seed))))
    assert "".join(ours), "the random model wrote nothing to compare"
    assert ours == theirs
    assert streamed_message(gateway, sampled(gateway, seed)) == theirs
    raw = sampled(gateway, seed, enable_thinking=False, reasoning_in_content=True)
    raw_theirs = message_of(post_ok(gateway, "/chat/completions", {**raw, "logprobs": True}))
    assert streamed_message(gateway, raw) == raw_theirs


def test_a_forced_answer_with_cut_characters_ends_at_its_eos(gateway: LiveGateway) -> None:
    answer = "于是乎 café ☕"
    payload = {
        "model": gateway.model,
        "messages": [{"role": "user", "content": "say it. " + LONG}],
        "structured_outputs": {"choice": [answer]},
        "enable_thinking": False,
        "max_tokens": 40,
    }
    body = long_enough(post_ok(gateway, "/chat/completions", payload))
    assert body["choices"][0]["message"]["content"] == answer
    assert body["choices"][0]["finish_reason"] == "stop"
    assert streamed_message(gateway, payload) == ("", answer)
