"""app.step_histogram: a step's inter-token latencies written at once, with the counts and
sum of observing them one by one."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Histogram

from app.step_histogram import (
    ITL_ATTRIBUTE,
    StepHistogram,
    batchable,
    batched_prometheus_logger,
    writes_per_step,
)

BOUNDS = [0.01, 0.025, 0.05, 0.1, 0.5, 1.0]


def _child(registry: CollectorRegistry, name: str) -> Any:
    return Histogram(name, "x", ["engine"], buckets=BOUNDS, registry=registry).labels("0")


def _samples(registry: CollectorRegistry, name: str) -> dict[tuple[str, str], float]:
    return {
        (s.name, s.labels.get("le", "")): s.value
        for metric in registry.collect()
        if metric.name == name
        for s in metric.samples
        if not s.name.endswith("_created")
    }


def test_a_flushed_step_counts_as_values_observed_one_by_one() -> None:
    registry = CollectorRegistry()
    reference, batched = _child(registry, "one"), _child(registry, "step")
    step = StepHistogram(batched)
    rng = random.Random(3)
    # values on the bounds themselves, between them and past the last (the +Inf bucket)
    values = [*BOUNDS, 0.0, 2.5, *(rng.uniform(0, 1.2) for _ in range(200))]
    for value in values:
        reference.observe(value)
        step.observe(value)
    assert _samples(registry, "step")[("step_count", "")] == 0  # nothing written before the flush
    step.flush()
    step.flush()  # nothing kept: writes nothing more
    one, many = _samples(registry, "one"), _samples(registry, "step")
    for (name, le), value in one.items():
        got = many[(name.replace("one", "step", 1), le)]
        assert math.isclose(got, value, rel_tol=1e-12), (name, le, got, value)
    assert many[("step_count", "")] == len(values)


def test_only_children_with_prometheus_client_internals_are_batched() -> None:
    assert batchable(_child(CollectorRegistry(), "h"))
    assert not batchable(object())


def test_the_logger_flushes_after_each_record_even_when_it_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vllm.v1.metrics.loggers import PrometheusStatLogger

    cls = batched_prometheus_logger()
    assert cls is not None and issubclass(cls, PrometheusStatLogger)
    registry = CollectorRegistry()
    child = _child(registry, "itl")
    logger = cls.__new__(cls)  # vLLM's __init__ needs a whole VllmConfig
    logger.step_histograms = {0: StepHistogram(child)}
    setattr(logger, ITL_ATTRIBUTE, logger.step_histograms)

    def record(self: Any, values: list[float], fail: bool = False) -> None:
        for value in values:  # as vLLM's record observes a step's latencies
            getattr(self, ITL_ATTRIBUTE)[0].observe(value)
        if fail:
            raise RuntimeError("boom")

    monkeypatch.setattr(PrometheusStatLogger, "record", record)
    logger.record([0.02, 0.03, 0.2])
    assert _samples(registry, "itl")[("itl_count", "")] == 3
    with pytest.raises(RuntimeError):
        logger.record([0.04], fail=True)
    assert _samples(registry, "itl")[("itl_count", "")] == 4

    from types import SimpleNamespace

    def engine(*loggers: object) -> object:
        return SimpleNamespace(logger_manager=SimpleNamespace(stat_loggers=list(loggers)))

    assert writes_per_step(engine(object(), logger))
    assert not writes_per_step(engine(object()))
    assert not writes_per_step(object())
