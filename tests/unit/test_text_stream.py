"""app.text_stream: the gateway's own detokenizer gives what vLLM's `DecodeStream` gives,
delta for delta, on the tiny model's byte-level tokenizer (whose vocabulary, like Qwen's,
cuts characters), and is refused where it would not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.chat.sampling import build_sampling_params
from app.schemas.chat import ChatCompletionRequest
from app.text_stream import (
    CHECK_PROMPT,
    Detokenizer,
    SequenceTexts,
    check_ids,
    lone_byte_ids,
    matches_decode_stream,
    own_detokenizer,
    special_ids,
)
from app.token_bytes import TokenBytes


@pytest.fixture(scope="module")
def detokenizer(tokenizer: Any) -> Detokenizer:
    found = own_detokenizer(tokenizer, TokenBytes(tokenizer))
    assert found is not None
    return found


def vllm_deltas(tokenizer: Any, prompt: list[int], ids: list[int]) -> list[str]:
    """What vLLM's FastIncrementalDetokenizer adds per token (skip_special_tokens)."""
    from tokenizers.decoders import DecodeStream

    stream = DecodeStream(ids=prompt, skip_special_tokens=True)
    return [stream.step(tokenizer.backend_tokenizer, i) or "" for i in ids]


def interesting_ids(tokenizer: Any) -> st.SearchStrategy[int]:
    """Added tokens, bytes that start or continue a character, any id."""
    added = sorted(tokenizer.added_tokens_decoder)
    high = lone_byte_ids(tokenizer)
    assert len(high) == 128
    return st.one_of(
        st.sampled_from(added),
        st.sampled_from(high),
        st.integers(min_value=0, max_value=len(tokenizer) - 1),
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_deltas_are_decode_streams(tokenizer: Any, detokenizer: Detokenizer, data: Any) -> None:
    ids = data.draw(st.lists(interesting_ids(tokenizer), max_size=30))
    prompt = tokenizer.encode(data.draw(st.sampled_from([CHECK_PROMPT, "x", "于是"])))
    stream = detokenizer.stream()
    assert [stream.push([i]) for i in ids] == vllm_deltas(tokenizer, prompt, ids)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_steps_of_several_tokens_join_up(
    tokenizer: Any, detokenizer: Detokenizer, data: Any
) -> None:
    """A step may bring several tokens (FINAL_ONLY brings them all): the same text."""
    ids = data.draw(st.lists(interesting_ids(tokenizer), max_size=30))
    cut = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=4)))
    stream = detokenizer.stream()
    pieces = [stream.push(ids[a:b]) for a, b in zip([0, *cut], [*cut, len(ids)], strict=True)]
    assert "".join(pieces) == "".join(vllm_deltas(tokenizer, [], ids))


def test_a_cut_character_is_held_until_it_is_whole(
    tokenizer: Any, detokenizer: Detokenizer
) -> None:
    ids = tokenizer.encode("于是乎", add_special_tokens=False)
    stream = detokenizer.stream()
    texts = [stream.push([i]) for i in ids]
    assert "" in texts and "\ufffd" not in "".join(texts)
    assert "".join(texts) == "于是乎"


def test_special_tokens_are_skipped_and_the_stop_token_left_out(
    tokenizer: Any, detokenizer: Detokenizer
) -> None:
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    think = tokenizer.convert_tokens_to_ids("<think>")
    assert im_end in special_ids(tokenizer) and think not in special_ids(tokenizer)
    hi = tokenizer.encode("hi", add_special_tokens=False)
    assert detokenizer.stream().push([think, *hi, im_end]) == "<think>hi"
    assert detokenizer.stream().push([*hi, think], stopped=True) == "hi"


@dataclass
class Out:
    index: int
    token_ids: list[int]
    finish_reason: str | None = None


def test_sequence_texts_keep_one_stream_per_choice(
    tokenizer: Any, detokenizer: Detokenizer
) -> None:
    a, b = (tokenizer.encode(t, add_special_tokens=False) for t in ("乎", "ok"))
    think = tokenizer.convert_tokens_to_ids("<think>")
    texts = SequenceTexts(detokenizer, keep_stop=False)
    got = [texts.text(Out(0, a[:1])), texts.text(Out(1, b)), texts.text(Out(0, a[1:]))]
    assert got == ["", "ok", "乎"]
    assert texts.text(Out(1, [think], "stop")) == ""  # a stop token id adds nothing
    assert SequenceTexts(detokenizer, keep_stop=True).text(Out(0, [think], "stop")) == "<think>"


def test_the_check_tries_every_added_token(tokenizer: Any) -> None:
    first, *rest = check_ids(tokenizer)
    assert set(tokenizer.added_tokens_decoder) <= set(first)
    assert rest and all(rest)


def test_the_check_fails_a_detokenizer_that_differs(tokenizer: Any) -> None:
    """Special tokens not skipped: `<|im_end|>` would show; the check sees it."""
    wrong = Detokenizer(TokenBytes(tokenizer), frozenset())
    assert not matches_decode_stream(tokenizer, wrong)


def test_no_own_detokenizer_for_a_tokenizer_that_is_not_byte_level() -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "▁hello": 1, "▁world": 2, "▁": 3}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    assert own_detokenizer(tokenizer, TokenBytes(tokenizer)) is None


def request(**extra: Any) -> ChatCompletionRequest:
    body = {"messages": [{"role": "user", "content": "hi"}], **extra}
    return ChatCompletionRequest.model_validate(body)


@pytest.mark.parametrize(
    ("extra", "asked", "detokenize"),
    [
        ({}, False, False),
        ({}, True, True),  # the caller keeps vLLM's (a budget, or thinking first)
        ({"stop": "\n"}, False, True),  # vLLM matches stop strings on its text
        ({"stop": ["a", "b"]}, False, True),
        ({"logprobs": True}, False, True),  # and names the tokens of logprobs
        ({"skip_special_tokens": False}, False, True),
        ({"include_stop_str_in_output": True}, False, False),
    ],
)
def test_who_detokenizes(extra: dict[str, Any], asked: bool, detokenize: bool) -> None:
    params = build_sampling_params(request(**extra), 8, stream=True, detokenize=asked)
    assert params.detokenize is detokenize
