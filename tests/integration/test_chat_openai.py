"""Chat completions through the real openai SDK (sync, async, streaming)."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.integration.conftest import LiveGateway


@pytest.fixture(scope="module")
def aclient(gateway: LiveGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0, timeout=120)


HELLO = [{"role": "user", "content": "hello"}]


def test_non_streaming_with_the_exact_path(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(model=gateway.model, messages=HELLO, max_tokens=8)
    assert resp.object == "chat.completion"
    assert resp.id.startswith("chatcmpl-")
    assert resp.model == gateway.model
    choice = resp.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length")
    assert resp.usage is not None
    assert resp.usage.prompt_tokens > 0
    assert 0 < resp.usage.completion_tokens <= 8
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens


def test_length_finish_and_max_completion_tokens(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_completion_tokens=3,
        extra_body={"ignore_eos": True},
    )
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage is not None and resp.usage.completion_tokens == 3


def test_ignore_eos_generates_exactly_max_tokens(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    resp = client.chat.completions.create(
        model=gateway.model, messages=HELLO, max_tokens=40, extra_body={"ignore_eos": True}
    )
    assert resp.usage is not None and resp.usage.completion_tokens == 40
    assert resp.choices[0].finish_reason == "length"


def test_n_choices(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=5,
        n=3,
        temperature=1.0,
        extra_body={"ignore_eos": True},
    )
    assert sorted(c.index for c in resp.choices) == [0, 1, 2]
    assert resp.usage is not None and resp.usage.completion_tokens == 15


def test_seed_makes_sampling_repeatable(client: openai.OpenAI, gateway: LiveGateway) -> None:
    def run(seed: int) -> str:
        resp = client.chat.completions.create(
            model=gateway.model,
            messages=HELLO,
            max_tokens=24,
            temperature=1.0,
            top_p=1.0,
            seed=seed,
            extra_body={"ignore_eos": True, "top_k": 0, "reasoning_in_content": True},
        )
        return resp.choices[0].message.content or ""

    assert run(1234) == run(1234)


def test_stop_string_ends_the_answer(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=100,
        temperature=0,
        extra_body={"enable_thinking": False},
        stop=["answer"],
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "stop"
    assert "answer" not in (choice.message.content or "")


def test_logprobs_and_top_logprobs(client: openai.OpenAI, gateway: LiveGateway) -> None:
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=4,
        logprobs=True,
        top_logprobs=3,
        extra_body={"ignore_eos": True},
    )
    logprobs = resp.choices[0].logprobs
    assert logprobs is not None and logprobs.content is not None
    assert len(logprobs.content) == 4
    for item in logprobs.content:
        assert item.logprob <= 0
        assert len(item.top_logprobs) == 3
        assert item.top_logprobs[0].logprob >= item.top_logprobs[-1].logprob


def test_logit_bias_steers_every_token(client: openai.OpenAI, gateway: LiveGateway) -> None:
    """+100 on one token id: the answer is that token, again and again (chat and stream)."""
    ids = httpx.post(gateway.base_url + "/tokenize", json={"prompt": "hello"}).json()["tokens"]
    token = ids[-1]
    text = httpx.post(gateway.base_url + "/detokenize", json={"tokens": [token]}).json()
    resp = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=4,
        logit_bias={str(token): 100},
        extra_body={"ignore_eos": True, "enable_thinking": False},
    )
    assert resp.choices[0].message.content == text["prompt"] * 4
    stream = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=3,
        stream=True,
        logit_bias={str(token): 100},
        extra_body={"ignore_eos": True, "enable_thinking": False},
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert streamed == text["prompt"] * 3


def test_content_parts_render_like_a_string(client: openai.OpenAI, gateway: LiveGateway) -> None:
    as_string = client.chat.completions.create(
        model=gateway.model, messages=[{"role": "user", "content": "hello there"}], max_tokens=1
    )
    as_parts = client.chat.completions.create(
        model=gateway.model,
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}],
            }
        ],
        max_tokens=1,
    )
    assert as_string.usage is not None and as_parts.usage is not None
    assert as_string.usage.prompt_tokens == as_parts.usage.prompt_tokens


def test_streaming_role_first_then_content(client: openai.OpenAI, gateway: LiveGateway) -> None:
    stream = client.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=12,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    content_chunks = [c for c in chunks if c.choices]
    first = content_chunks[0].choices[0].delta
    assert first.role == "assistant"
    assert first.content or getattr(first, "reasoning_content", None), "first chunk has no text"
    assert content_chunks[-1].choices[0].finish_reason == "length"
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    assert usage is not None and usage.completion_tokens == 12
    assert all(c.id == chunks[0].id for c in chunks)


async def test_async_client_concurrent(aclient: openai.AsyncOpenAI, gateway: LiveGateway) -> None:
    import asyncio

    results = await asyncio.gather(
        *[
            aclient.chat.completions.create(
                model=gateway.model,
                messages=[{"role": "user", "content": f"q{i}"}],
                max_tokens=6,
                extra_body={"ignore_eos": True},
            )
            for i in range(8)
        ]
    )
    assert all(r.usage is not None and r.usage.completion_tokens == 6 for r in results)


async def test_async_streaming(aclient: openai.AsyncOpenAI, gateway: LiveGateway) -> None:
    stream = await aclient.chat.completions.create(
        model=gateway.model,
        messages=HELLO,
        max_tokens=5,
        stream=True,
        extra_body={"ignore_eos": True},
    )
    finish = [c.choices[0].finish_reason async for c in stream if c.choices]
    assert finish[-1] == "length"


def test_unknown_model_is_404_with_valid_names(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="gpt-4o", messages=HELLO, max_tokens=2)
    body = err.value.body
    assert isinstance(body, dict)
    assert body["code"] == "model_not_found"
    listed = str(body["message"]).split("Valid names: ", 1)[1].rstrip(".").split(", ")
    # the served path, the alias, and the short names a client would rather type
    assert {"qwen", "Qwen/Qwen3-0.6B", "Qwen3-0.6B"} <= set(listed), listed
    for name in listed:  # each one answers
        client.chat.completions.create(model=name, messages=HELLO, max_tokens=1)


def test_context_length_is_checked_before_the_engine(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model=gateway.model, messages=HELLO, max_tokens=5000)
    body = err.value.body
    assert isinstance(body, dict)
    assert body["code"] == "context_length_exceeded"
    assert "2048" in body["message"] and "5000" in body["message"]


def test_models_list(client: openai.OpenAI, gateway: LiveGateway) -> None:
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert ids[0] == gateway.model
    assert "qwen" in ids  # the configured alias
    first = models.data[0].model_dump()
    assert first["root"] == gateway.model
    assert first["max_model_len"] == 2048


def test_the_last_assistant_message_is_continued(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    """vLLM's `continue_final_message` and Qwen's `partial: true`: the prompt ends inside
    the assistant's message (as /tokenize shows), not with a new assistant turn."""
    prefill = [*HELLO, {"role": "assistant", "content": "Hello, I am"}]
    counted = httpx.post(
        gateway.base_url + "/tokenize",
        json={"messages": prefill, "continue_final_message": True},
        timeout=30,
    ).json()
    text = httpx.post(
        gateway.base_url + "/detokenize", json={"tokens": counted["tokens"]}, timeout=30
    ).json()["prompt"]
    assert text.endswith("Hello, I am")
    continued = client.chat.completions.create(
        model=gateway.model,
        messages=prefill,
        max_tokens=4,
        extra_body={"continue_final_message": True},
    )
    partial = [*HELLO, {**prefill[-1], "partial": True}]
    in_partial_mode = client.chat.completions.create(
        model=gateway.model,
        messages=partial,
        max_tokens=4,
    )
    new_turn = client.chat.completions.create(
        model=gateway.model,
        messages=prefill,
        max_tokens=1,
    )
    assert continued.usage and in_partial_mode.usage and new_turn.usage
    assert continued.usage.prompt_tokens == in_partial_mode.usage.prompt_tokens == counted["count"]
    assert new_turn.usage.prompt_tokens > counted["count"]
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(
            model=gateway.model,
            messages=HELLO,
            max_tokens=1,
            extra_body={"continue_final_message": True},
        )
    body = err.value.body
    assert isinstance(body, dict) and body["param"] == "continue_final_message"
