"""app.engine.cache_vllm_settings: vLLM's `VLLM_*` settings read once once the engine is up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.engine import cache_vllm_settings


@pytest.fixture
def envs() -> Iterator[object]:
    from vllm import envs

    yield envs
    envs.disable_envs_cache()  # other tests read them afresh


def test_settings_are_cached_with_the_same_values(envs, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("VLLM_COMPUTE_NANS_IN_LOGITS", "0")
    before = envs.VLLM_COMPUTE_NANS_IN_LOGITS
    assert cache_vllm_settings() is True
    assert cache_vllm_settings() is True  # twice is harmless (vLLM wraps it once)
    monkeypatch.setenv("VLLM_COMPUTE_NANS_IN_LOGITS", "1")
    assert envs.VLLM_COMPUTE_NANS_IN_LOGITS == before is False  # read once: the change unseen


def test_a_vllm_without_the_cache_is_left_alone(envs, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delattr(envs, "enable_envs_cache")
    assert cache_vllm_settings() is False
    monkeypatch.setenv("VLLM_COMPUTE_NANS_IN_LOGITS", "1")
    assert envs.VLLM_COMPUTE_NANS_IN_LOGITS is True
