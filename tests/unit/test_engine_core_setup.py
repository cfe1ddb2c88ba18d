"""app.engine_core_setup: the engine core's target replaced by one that applies the
gateway's settings first (vLLM's own EngineCoreProc, run with a stand-in target)."""

from __future__ import annotations

import functools
import pickle
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import vllm.v1.engine.core as core
from vllm.v1.engine.core import EngineCoreProc

from app import engine_core_setup
from app.block_hashes import BlockHasher
from app.engine_core_setup import EngineCoreSetup, set_engine_core_setup


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """vLLM's class and hasher, the module's memory of its target and the interval, as
    they were."""
    for name in ("run_engine_core", "run_busy_loop"):
        monkeypatch.setattr(EngineCoreProc, name, EngineCoreProc.__dict__[name])
    monkeypatch.setattr(core, "get_request_block_hasher", core.get_request_block_hasher)
    monkeypatch.setattr(engine_core_setup, "_vllm_target", None)
    interval = sys.getswitchinterval()
    yield
    sys.setswitchinterval(interval)


def test_nothing_to_set_leaves_vllm_alone(restored: None) -> None:
    own = EngineCoreProc.__dict__["run_engine_core"]
    assert set_engine_core_setup(EngineCoreSetup()) is False
    assert EngineCoreProc.__dict__["run_engine_core"] is own


def test_the_target_vllm_starts_applies_the_setup_then_runs_vllms(restored: None) -> None:
    vllms = EngineCoreProc.run_engine_core
    setup = EngineCoreSetup(switch_interval_s=0.00025)
    assert set_engine_core_setup(setup) is True
    target = EngineCoreProc.run_engine_core  # what vLLM's launcher reads as it starts one
    assert isinstance(target, functools.partial)
    assert target.func is engine_core_setup.run_engine_core and target.args == (setup,)
    assert pickle.loads(pickle.dumps(target)).args == (setup,)  # a spawned child gets it
    assert set_engine_core_setup(EngineCoreSetup(switch_interval_s=0.0005)) is True
    assert engine_core_setup._vllm_target is vllms  # again: vLLM's kept

    ran: list[Any] = []
    engine_core_setup._vllm_target = lambda *a, **k: ran.append((a, k, sys.getswitchinterval()))
    EngineCoreProc.run_engine_core(1, dp_rank=0)
    assert ran == [((1,), {"dp_rank": 0}, pytest.approx(0.0005))]
    assert not hasattr(core.get_request_block_hasher(16, hash), "state")  # not asked


def test_the_engine_loop_logs_what_was_set(
    restored: None, caplog: pytest.LogCaptureFixture
) -> None:
    looped: list[tuple[float, bool]] = []

    def loop(_self: Any) -> None:
        hasher = core.get_request_block_hasher(16, hash)  # as EngineCore.__init__ makes it
        looped.append((sys.getswitchinterval(), isinstance(hasher.state, BlockHasher)))

    EngineCoreProc.run_busy_loop = loop
    engine_core_setup._vllm_target = lambda *a, **k: EngineCoreProc.run_busy_loop(None)
    with caplog.at_level("INFO", logger="vllm.gateway"):
        engine_core_setup.run_engine_core(EngineCoreSetup(0.001, fast_block_hashes=True))
    assert looped == [(pytest.approx(0.001), True)]
    assert "interpreter-lock switch interval 1 ms" in caplog.text
    assert "prefix-cache block hashes by the gateway" in caplog.text


def test_block_hashes_alone_leave_the_interval(restored: None) -> None:
    sys.setswitchinterval(0.004)
    engine_core_setup._vllm_target = lambda *a, **k: sys.getswitchinterval()
    setup = EngineCoreSetup(fast_block_hashes=True)
    assert engine_core_setup.run_engine_core(setup) == pytest.approx(0.004)
    assert isinstance(core.get_request_block_hasher(16, hash).state, BlockHasher)
