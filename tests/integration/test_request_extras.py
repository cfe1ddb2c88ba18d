"""Request fields clients send that the gateway honours on the real engine: vLLM's
`continuous_usage_stats` (usage in every chunk) and `include_stop_str_in_output` on chat,
OpenAI's refusal parts in a replayed assistant message, and a clear 400 for an unknown
`reasoning_effort`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.conftest import LiveGateway
from tests.integration.live_helpers import post_ok, sse_frames
from tests.openapi_schema import load_openapi, validate_schema

HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("path", "schema", "prompt"),
    [
        ("/chat/completions", "CreateChatCompletionStreamResponse", {"messages": HI}),
        ("/completions", "CreateCompletionResponse", {"prompt": "hello"}),
    ],
)
def test_continuous_usage_stats_put_the_counts_so_far_in_every_chunk(
    gateway: LiveGateway, path: str, schema: str, prompt: dict[str, Any]
) -> None:
    payload = {
        **prompt,
        "max_tokens": 12,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    frames = sse_frames(gateway, path, payload)
    with_choices = [f for f in frames if f["choices"]]
    assert with_choices and all("usage" in f for f in with_choices)
    counts = [f["usage"]["completion_tokens"] for f in with_choices]
    assert counts == sorted(counts) and counts[0] >= 1
    final = frames[-1]
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 12
    assert counts[-1] == 12
    prompt_tokens = {f["usage"]["prompt_tokens"] for f in frames}
    assert len(prompt_tokens) == 1
    for f in frames:
        usage = f["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        # OpenAI's completions schema has no stream form: its finish_reason is never null,
        # so only a completions stream's last chunks are checked (as test_completions does)
        finished = all(c["finish_reason"] for c in f["choices"])
        if load_openapi() is not None and (path == "/chat/completions" or finished):
            validate_schema(schema, f)
    # without include_usage the option adds nothing, as in vLLM
    plain = sse_frames(
        gateway, path, {**payload, "stream_options": {"continuous_usage_stats": True}}
    )
    assert not any("usage" in f for f in plain)


def test_include_stop_str_in_output_keeps_the_matched_stop_string(gateway: LiveGateway) -> None:
    base = {
        "messages": HI, "max_tokens": 24, "seed": 7, "ignore_eos": True, "enable_thinking": False,
    }  # fmt: skip
    text = post_ok(gateway, "/chat/completions", base)["choices"][0]["message"]["content"]
    words = [w for w in text.split() if len(w) >= 3]
    assert words, text
    stop = words[len(words) // 2]  # a word from the middle of the seeded answer
    cut = post_ok(gateway, "/chat/completions", {**base, "stop": [stop]})["choices"][0]
    kept = post_ok(
        gateway, "/chat/completions", {**base, "stop": [stop], "include_stop_str_in_output": True}
    )
    kept_choice = kept["choices"][0]
    assert cut["finish_reason"] == kept_choice["finish_reason"] == "stop"
    assert stop not in cut["message"]["content"]
    assert kept_choice["message"]["content"] == cut["message"]["content"] + stop


def test_a_replayed_refusal_part_is_read_as_text(gateway: LiveGateway) -> None:
    messages = [
        {"role": "user", "content": "say something rude"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "I won't do that."}]},
        {"role": "user", "content": "fine"},
    ]
    body = post_ok(gateway, "/chat/completions", {"messages": messages, "max_tokens": 4})
    assert body["choices"][0]["message"]["role"] == "assistant"
    r = httpx.post(gateway.base_url + "/tokenize", json={"messages": messages}, timeout=30)
    assert r.status_code == 200, r.text
    ids = r.json()["tokens"]
    d = httpx.post(gateway.base_url + "/detokenize", json={"tokens": ids}, timeout=30)
    assert "I won't do that." in d.json()["prompt"]
    assert body["usage"]["prompt_tokens"] == len(ids)


def test_an_unknown_reasoning_effort_is_a_400_naming_it(gateway: LiveGateway) -> None:
    r = httpx.post(
        gateway.v1 + "/chat/completions",
        json={"messages": HI, "max_tokens": 2, "reasoning_effort": "bogus"},
        timeout=30,
    )
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["param"] == "reasoning_effort" and "bogus" in error["message"]
    ok = post_ok(
        gateway, "/chat/completions", {"messages": HI, "max_tokens": 2, "reasoning_effort": "High"}
    )
    assert ok["choices"][0]["finish_reason"] == "length"
