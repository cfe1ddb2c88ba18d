"""Logprobs keep the bytes of tokens that end inside a character (the tiny model's
byte-level BPE splits "乎" as e4 b9 | 8e, as Qwen's splits rarer characters): chat's
`bytes` join up to the answer's bytes, and every token's text joins up to the text
(chat `token`, legacy `tokens` with `text_offset`), streamed or not."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.conftest import LiveGateway
from tests.integration.live_helpers import post_ok, sse_frames
from tests.openapi_schema import load_openapi, validate_schema

ANSWER = "于是乎 café"  # "乎" and "é" are cut in two by the tiny model's tokenizer
PROMPT = "Said: 于是乎 café ☕"
ECHO = {"echo": True, "max_tokens": 0, "logprobs": 1}  # the prompt's tokens only


def chat_payload(gateway: LiveGateway) -> dict[str, Any]:
    """An answer forced to ANSWER by a grammar, so the cut characters are generated."""
    return {
        "model": gateway.model,
        "messages": [{"role": "user", "content": "say it"}],
        "structured_outputs": {"choice": [ANSWER]},
        "enable_thinking": False,
        "logprobs": True,
        "top_logprobs": 2,
        "max_tokens": 40,
    }


def assert_joined(items: list[dict[str, Any]], text: str) -> None:
    assert "".join(item["token"] for item in items) == text
    assert bytes(b for item in items for b in item["bytes"]) == text.encode()
    assert all(item["bytes"] for item in items), items  # no token lost its bytes
    assert any(bytes(item["bytes"]).decode("utf-8", "replace") != item["token"] for item in items)
    for item in items:
        for top in item["top_logprobs"]:
            assert top["bytes"], item


def test_chat_logprobs_bytes(gateway: LiveGateway) -> None:
    body = post_ok(gateway, "/chat/completions", chat_payload(gateway))
    if load_openapi() is not None:
        validate_schema("CreateChatCompletionResponse", body)
    choice = body["choices"][0]
    assert choice["message"]["content"] == ANSWER
    items = choice["logprobs"]["content"]
    special = [i for i in items if i["token"] == "<|im_end|>"]  # the end, not in the text
    assert_joined([i for i in items if i not in special], ANSWER)


def test_streamed_chat_logprobs_bytes(gateway: LiveGateway) -> None:
    chunks = sse_frames(gateway, "/chat/completions", chat_payload(gateway))
    items: list[dict[str, Any]] = []
    content = ""
    for chunk in chunks:
        if load_openapi() is not None:
            validate_schema("CreateChatCompletionStreamResponse", chunk)
        for choice in chunk["choices"]:
            content += choice["delta"].get("content") or ""
            items += (choice.get("logprobs") or {}).get("content") or []
    assert content == ANSWER
    assert_joined([i for i in items if i["token"] != "<|im_end|>"], ANSWER)


def test_streamed_chat_role_comes_first_when_the_first_text_is_held(gateway: LiveGateway) -> None:
    """The first token ends inside "乎": its frame has logprobs but no text yet, and it is
    the frame that carries the role (OpenAI's first chunk of a choice always does)."""
    payload = chat_payload(gateway) | {"structured_outputs": {"choice": ["乎 café"]}}
    chunks = sse_frames(gateway, "/chat/completions", payload)
    first = chunks[0]["choices"][0]
    held = bytes(first["logprobs"]["content"][0]["bytes"])
    with pytest.raises(UnicodeDecodeError):
        held.decode()  # the case under test: the first token's text is held back
    assert first["delta"].get("role") == "assistant"
    roles = [c["delta"].get("role") for chunk in chunks for c in chunk["choices"]]
    assert roles.count("assistant") == 1, roles
    content = "".join(c["delta"].get("content") or "" for ch in chunks for c in ch["choices"])
    assert content == "乎 café"


def assert_offsets(logprobs: dict[str, Any], text: str, cut: bool = True) -> None:
    tokens = logprobs["tokens"]
    assert "".join(tokens) == text
    for token, offset in zip(tokens, logprobs["text_offset"], strict=True):
        assert text[offset : offset + len(token)] == token
    if cut:
        assert "" in tokens  # a token that starts a cut character adds nothing yet


def token_ids(gateway: LiveGateway, text: str) -> list[int]:
    r = httpx.post(
        gateway.base_url + "/tokenize",
        json={"prompt": text, "add_special_tokens": False},
        timeout=30,
    )
    ids: list[int] = r.json()["tokens"]
    return ids


def test_legacy_tokens_join_up_to_the_echoed_text(gateway: LiveGateway) -> None:
    body = post_ok(gateway, "/completions", {"model": gateway.model, "prompt": PROMPT, **ECHO})
    if load_openapi() is not None:
        validate_schema("CreateCompletionResponse", body)
    choice = body["choices"][0]
    assert choice["text"] == PROMPT
    assert_offsets(choice["logprobs"], PROMPT)


def test_legacy_tokens_with_a_byte_that_is_not_utf8(gateway: LiveGateway) -> None:
    """The report's case: `["于", "\u0000W", "", "el"]` for "于\u0000W\ufffdel" (a lone
    continuation byte: the second half of "乎")."""
    lone = token_ids(gateway, "乎")[-1]
    ids = [*token_ids(gateway, "于W"), lone, *token_ids(gateway, "el")]
    body = post_ok(gateway, "/completions", {"model": gateway.model, "prompt": ids, **ECHO})
    choice = body["choices"][0]
    assert choice["text"] == "于W\ufffdel"
    assert_offsets(choice["logprobs"], choice["text"], cut=False)


@pytest.mark.parametrize("stream", [False, True])
def test_legacy_tokens_join_up_with_a_generated_answer(gateway: LiveGateway, stream: bool) -> None:
    payload = {
        "model": gateway.model,
        "prompt": PROMPT,
        "echo": True,
        "logprobs": 2,
        "max_tokens": 12,
        "structured_outputs": {"choice": [ANSWER]},
    }
    if not stream:
        choice = post_ok(gateway, "/completions", payload)["choices"][0]
        text, logprobs = choice["text"], choice["logprobs"]
    else:
        text, logprobs = "", {"tokens": [], "text_offset": []}
        for chunk in sse_frames(gateway, "/completions", payload):
            for choice in chunk["choices"]:
                text += choice["text"]
                for key in logprobs:
                    logprobs[key] += (choice["logprobs"] or {}).get(key, [])
    assert text.startswith(PROMPT) and ANSWER in text
    ended = [t for t in logprobs["tokens"] if t == "<|im_end|>" or t == "<|endoftext|>"]
    trimmed = {"tokens": logprobs["tokens"][: len(logprobs["tokens"]) - len(ended)]}
    trimmed["text_offset"] = logprobs["text_offset"][: len(trimmed["tokens"])]
    assert_offsets(trimmed, text)
