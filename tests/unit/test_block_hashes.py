"""app.block_hashes against vLLM's own hasher, on vLLM's own Request (no engine)."""

from __future__ import annotations

import logging
import random
from types import SimpleNamespace
from typing import Any

import pytest
import vllm.v1.core.kv_cache_utils as utils
from vllm.lora.request import LoRARequest
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import sha256
from vllm.v1.engine import EngineCoreRequest
from vllm.v1.request import Request

from app import block_hashes
from app.block_hashes import CHECKED, BlockHasher, hasher

SIZE = 16


@pytest.fixture(scope="module")
def vllms() -> Any:
    utils.init_none_hash(sha256)
    return utils.get_request_block_hasher(SIZE, sha256)


def _core_request(length: int, seed: int = 0, **extra: Any) -> EngineCoreRequest:
    rng = random.Random(seed)
    ids = [rng.randrange(151_000) for _ in range(length)]
    fields: dict[str, Any] = {
        "mm_features": None, "pooling_params": None, "arrival_time": 0.0,
        "lora_request": None, "cache_salt": None, "data_parallel_rank": None,
    }  # fmt: skip
    return EngineCoreRequest(
        request_id=f"r{length}-{seed}",
        prompt_token_ids=ids,
        sampling_params=SamplingParams(max_tokens=8),
        **{**fields, **extra},
    )


def _ours(vllms: Any) -> Any:
    return hasher(SIZE, sha256, vllms, utils)


@pytest.mark.parametrize("length", [0, 1, 15, 16, 17, 33, 1000, 1024])
def test_a_plain_prompt_hashes_as_vllm_hashes_it(vllms: Any, length: int) -> None:
    ours = _ours(vllms)
    ours.state.to_check = 0  # no comparison inside: this test is the comparison
    theirs = Request.from_engine_core_request(_core_request(length), vllms)
    mine = Request.from_engine_core_request(_core_request(length), ours)
    assert mine.block_hashes == theirs.block_hashes
    assert len(mine.block_hashes) == length // SIZE
    for token in range(40):  # decoding fills more blocks, chained on the prompt's
        theirs.append_output_token_ids(token)
        mine.append_output_token_ids(token)
        assert mine.block_hashes == theirs.block_hashes
    assert len(mine.block_hashes) == (length + 40) // SIZE


@pytest.mark.parametrize(
    "extra",
    [{"cache_salt": "tenant-a"}, {"lora_request": LoRARequest("adapter", 1, "/nowhere")}],
    ids=["cache salt", "LoRA"],
)
def test_a_request_with_extra_keys_goes_to_vllms_hasher(
    vllms: Any, extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _ours(vllms)
    monkeypatch.setattr(ours.state, "_hashes", lambda *_: pytest.fail("hashed by the gateway"))
    theirs = Request.from_engine_core_request(_core_request(64, **extra), vllms)
    mine = Request.from_engine_core_request(_core_request(64, **extra), ours)
    assert mine.block_hashes == theirs.block_hashes
    plain = Request.from_engine_core_request(_core_request(64), vllms)
    assert mine.block_hashes[0] != plain.block_hashes[0]  # the key is in the hash


def test_the_first_requests_are_checked_against_vllms(vllms: Any) -> None:
    calls: list[str] = []

    def counting(request: Any) -> list[Any]:
        calls.append(request.request_id)
        return list(vllms(request))

    ours = hasher(SIZE, sha256, counting, utils)
    for seed in range(CHECKED + 5):
        Request.from_engine_core_request(_core_request(48, seed), ours)
    assert len(calls) == CHECKED and ours.state.on


def test_a_vllm_that_hashes_otherwise_gets_its_own_back(
    vllms: Any, caplog: pytest.LogCaptureFixture
) -> None:
    other = lambda request: [b"x"] * (request.num_tokens // SIZE)  # noqa: E731
    ours = hasher(SIZE, sha256, other, utils)
    with caplog.at_level(logging.WARNING, logger="vllm.gateway"):
        first = Request.from_engine_core_request(_core_request(32), ours)
    assert first.block_hashes == [b"x", b"x"] and not ours.state.on
    assert "differ from vLLM's" in caplog.text
    ours.state.to_check = 0
    assert ours(Request.from_engine_core_request(_core_request(16), None)) == [b"x"]


def test_an_error_gives_vllms_hasher_back(vllms: Any) -> None:
    broken = SimpleNamespace(generate_block_hash_extra_keys=utils.generate_block_hash_extra_keys)
    ours = hasher(SIZE, sha256, vllms, broken)  # no NONE_HASH: the hashing fails
    request = Request.from_engine_core_request(_core_request(32), None)
    assert ours(request) == vllms(request) and not ours.state.on


def test_install_wraps_the_engine_cores_hasher_once() -> None:
    made: list[tuple[int, Any]] = []
    core = SimpleNamespace(get_request_block_hasher=lambda size, fn: made.append((size, fn)))
    assert block_hashes.install(core, utils) is True
    made_here = core.get_request_block_hasher(16, sha256)
    assert isinstance(made_here.state, BlockHasher) and made == [(16, sha256)]
    wrapped = core.get_request_block_hasher
    assert block_hashes.install(core, utils) is True and core.get_request_block_hasher is wrapped
    assert block_hashes.install(SimpleNamespace(), utils) is False  # a vLLM without one


def test_install_reaches_the_real_engine_core(monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm.v1.engine.core as core

    monkeypatch.setattr(core, "get_request_block_hasher", core.get_request_block_hasher)
    assert block_hashes.install() is True
    assert isinstance(core.get_request_block_hasher(SIZE, sha256).state, BlockHasher)
