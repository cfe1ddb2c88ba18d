"""app.engine_switch: the engine core's target replaced by one that sets the interpreter
lock's switch interval first (vLLM's own EngineCoreProc, run with a stand-in target)."""

from __future__ import annotations

import functools
import pickle
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from vllm.v1.engine.core import EngineCoreProc

from app import engine_switch


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """vLLM's class, the module's memory of its target and the interval, as they were."""
    for name in ("run_engine_core", "run_busy_loop"):
        monkeypatch.setattr(EngineCoreProc, name, EngineCoreProc.__dict__[name])
    monkeypatch.setattr(engine_switch, "_vllm_target", None)
    interval = sys.getswitchinterval()
    yield
    sys.setswitchinterval(interval)


def test_unset_leaves_vllm_alone(restored: None) -> None:
    own = EngineCoreProc.__dict__["run_engine_core"]
    assert engine_switch.set_engine_switch_interval(None) is False
    assert EngineCoreProc.__dict__["run_engine_core"] is own


def test_the_target_vllm_starts_sets_the_interval_then_runs_vllms(restored: None) -> None:
    vllms = EngineCoreProc.run_engine_core
    assert engine_switch.set_engine_switch_interval(0.25) is True
    target = EngineCoreProc.run_engine_core  # what vLLM's launcher reads as it starts one
    assert isinstance(target, functools.partial)
    assert target.func is engine_switch.run_engine_core and target.args == (0.00025,)
    assert pickle.loads(pickle.dumps(target)).args == (0.00025,)  # a spawned child gets it
    assert engine_switch.set_engine_switch_interval(0.5) is True  # again: vLLM's kept
    assert engine_switch._vllm_target is vllms

    ran: list[Any] = []
    engine_switch._vllm_target = lambda *a, **k: ran.append((a, k, sys.getswitchinterval()))
    EngineCoreProc.run_engine_core(1, dp_rank=0)
    assert ran == [((1,), {"dp_rank": 0}, pytest.approx(0.0005))]


def test_the_engine_loop_logs_the_interval_it_runs_with(
    restored: None, caplog: pytest.LogCaptureFixture
) -> None:
    looped: list[float] = []
    EngineCoreProc.run_busy_loop = lambda self: looped.append(sys.getswitchinterval())
    engine_switch._vllm_target = lambda *a, **k: EngineCoreProc.run_busy_loop(None)
    with caplog.at_level("INFO", logger="vllm.gateway"):
        engine_switch.run_engine_core(0.001)
    assert looped == [pytest.approx(0.001)]
    assert "interpreter-lock switch interval 1 ms" in caplog.text
