"""app.completions: the pure pieces (request checks, prompts, defaults, legacy logprobs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from app.chat.normalize import Defaults
from app.completions.prepare import (
    PromptInput,
    check_length,
    new_completion_id,
    prompt_inputs,
    sampling_defaults,
    validate,
)
from app.completions.wire import LegacyLogprobs, finish_reason
from app.encode import OFF_LOOP_CHARS
from app.errors import GatewayError
from app.schemas.completions import CompletionRequest
from app.token_bytes import TokenBytes, TokenTexts


class FakeTokenizer:
    """Characters are tokens: id = code point (vocabulary of 1000)."""

    eos_token_id = 0

    def __len__(self) -> int:
        return 1000

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return ([1] if add_special_tokens else []) + [ord(c) for c in text]

    def decode(self, ids: Sequence[int], **kwargs: Any) -> str:
        return "".join(chr(i) for i in ids)

    def convert_ids_to_tokens(self, ids: Any) -> Any:
        return [chr(i) for i in ids]


def request(**fields: Any) -> CompletionRequest:
    return CompletionRequest.model_validate({"prompt": "hi", **fields})


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"suffix": "tail"}, "suffix"),
        ({"best_of": 3}, "best_of"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"prompt": []}, "prompt"),
    ],
)
def test_rejected(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(GatewayError) as info:
        validate(request(**fields))
    assert info.value.status == 400 and info.value.param == param


def test_accepted() -> None:
    validate(request(max_tokens=0, echo=True))
    validate(request(best_of=2, n=2))
    validate(request(suffix=""))


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("ab", [("ab", [1, 97, 98])]),
        (["a", "b"], [("a", [1, 97]), ("b", [1, 98])]),
        ([104, 105], [("hi", [104, 105])]),
        ([[104], [105, 106]], [("h", [104]), ("ij", [105, 106])]),
        ("a\u200bb", [("ab", [1, 97, 98])]),  # invisible characters go
    ],
)
async def test_prompt_inputs(prompt: Any, expected: list[tuple[str, list[int]]]) -> None:
    prompts, _ = await prompt_inputs(request(prompt=prompt), FakeTokenizer())  # type: ignore[arg-type]
    assert [(p.text, p.token_ids) for p in prompts] == expected


async def test_prompt_inputs_reports_stripping_and_special_tokens() -> None:
    tokenizer: Any = FakeTokenizer()
    prompts, stripped = await prompt_inputs(
        request(prompt="a\u200b", add_special_tokens=False), tokenizer
    )
    assert stripped and prompts[0].token_ids == [97]
    assert not (await prompt_inputs(request(prompt="a"), tokenizer))[1]


async def test_a_long_prompt_keeps_its_special_tokens_off_the_loop() -> None:
    text = "b" * OFF_LOOP_CHARS  # encoded in the encode thread
    prompts, _ = await prompt_inputs(request(prompt=text), FakeTokenizer())  # type: ignore[arg-type]
    assert prompts[0].token_ids == [1] + [98] * OFF_LOOP_CHARS


@pytest.mark.parametrize("prompt", [[5, 1000], [[1], [2000]], ""])
async def test_bad_prompts(prompt: Any) -> None:
    with pytest.raises(GatewayError) as info:
        await prompt_inputs(request(prompt=prompt, add_special_tokens=False), FakeTokenizer())  # type: ignore[arg-type]
    assert info.value.param == "prompt"


def test_check_length() -> None:
    check_length([PromptInput("a", [1] * 10)], 6, 16)
    with pytest.raises(GatewayError) as info:
        check_length([PromptInput("a", [1] * 10), PromptInput("b", [1] * 11)], 6, 16)
    assert info.value.code == "context_length_exceeded"


def test_sampling_defaults_settings_then_model() -> None:
    defaults = Defaults(
        sampling={"temperature": 0.3},
        generation_config={"temperature": 0.6, "top_p": 0.95, "top_k": 20.0, "max_tokens": 9},
    )
    assert sampling_defaults(request(), defaults) == {
        "temperature": 0.3,
        "top_p": 0.95,
        "top_k": 20,
    }
    assert sampling_defaults(request(temperature=1.0, top_p=0.5, top_k=1), defaults) == {}
    assert sampling_defaults(request(), Defaults()) == {}


def test_completion_ids() -> None:
    assert new_completion_id().startswith("cmpl-")
    assert new_completion_id("abc").startswith("cmpl-abc-")


@dataclass
class Lp:
    logprob: float
    rank: int
    decoded_token: str


class WordTokenizer:
    """Token id -> a fixed piece; not byte-level (pieces are their own text)."""

    PIECES: ClassVar[dict[int, str]] = {1: "A", 2: "b", 3: "c", 4: "dd"}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return []

    def convert_ids_to_tokens(self, token_id: int) -> str:
        return self.PIECES[token_id]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.PIECES[i] for i in ids)


def test_legacy_logprobs_have_no_nulls_and_track_offsets() -> None:
    logprobs = LegacyLogprobs()
    texts = TokenTexts(TokenBytes(WordTokenizer()))
    positions: list[dict[int, Any] | None] = [
        None,  # an echoed prompt's first token
        {2: Lp(-0.5, 1, "b"), 3: Lp(-1.0, 2, "c")},
        {4: Lp(float("-inf"), 3, "dd"), 2: Lp(-0.1, 1, "b"), 3: Lp(-0.2, 2, "c")},
    ]
    new = logprobs.add([1, 2, 4], positions, 1, texts)
    assert new.tokens == ["A", "b", "dd"]
    assert new.token_logprobs == [0.0, -0.5, -9999.0]
    assert new.top_logprobs == [{"A": 0.0}, {"b": -0.5}, {"dd": -9999.0, "b": -0.1}]
    assert new.text_offset == [0, 1, 2]
    more = logprobs.add([3], [{3: Lp(-0.3, 1, "c")}], 0, texts)
    assert more.text_offset == [4]
    assert logprobs.wire() == {
        "tokens": ["A", "b", "dd", "c"],
        "token_logprobs": [0.0, -0.5, -9999.0, -0.3],
        "top_logprobs": [{"A": 0.0}, {"b": -0.5}, {"dd": -9999.0, "b": -0.1}, {"c": -0.3}],
        "text_offset": [0, 1, 2, 4],
    }


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (None, None),
        ("stop", "stop"),
        ("length", "length"),
        ("abort", "stop"),
        ("tool_calls", "stop"),
    ],
)
def test_finish_reason(reason: str | None, expected: str | None) -> None:
    assert finish_reason(reason) == expected
